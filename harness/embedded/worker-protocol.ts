// What the worker host (worker-host.ts) and its sidecar thread
// (sidecar-worker.ts) say to each other: requests carry an id, each answer
// the id of its request.
import type { LogLevel } from '../../src/log/logger.ts';
import type { RunSidecarDeps } from '../../src/sidecar/run.ts';

export type SidecarTuning = Pick<RunSidecarDeps, 'tickMs' | 'writeWindowMs' | 'shutdownTimeoutMs'>;

export interface SidecarWorkerData {
  /** The run's log file (appended to), or none: the thread logs nothing. */
  logFile?: string;
  logLevel: LogLevel;
  tuning: SidecarTuning;
}

/** A sidecar's place, as a thread can receive it: its kubeconfig as text. */
export interface WorkerPlace {
  name: string;
  index: number;
  stateDir: string;
  kubeconfig: string;
  events: boolean;
  listenPort?: number;
  leakGraceSeconds?: number;
}

export type WorkerRequest =
  | { id: number; op: 'start'; place: WorkerPlace }
  | { id: number; op: 'ready'; name: string }
  | { id: number; op: 'stop'; name: string }
  | { id: number; op: 'cpu' }
  | { id: number; op: 'close' };

export type WorkerReply =
  | { id: number; ok: true; url?: string; port?: number; ready?: boolean; cpuMs?: number }
  | { id: number; ok: false; error: string };
