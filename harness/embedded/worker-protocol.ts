// What the worker host (worker-host.ts) and its sidecar thread
// (sidecar-worker.ts) say to each other: requests carry an id, each answer
// the id of its request. What the thread's kubelets report (pods Running,
// pods that ended waiting) comes unasked, in batches.
import type { LogLevel } from '../../src/log/logger.ts';
import type { PodEndedWaiting, PodWait } from '../kubelet/kubelet.ts';
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

/** A kubelet's place: its node, and the admin's kubeconfig as text. */
export interface WorkerKubeletPlace {
  name: string;
  nodeIp: string;
  kubeconfig: string;
}

export type WorkerRequest =
  | { id: number; op: 'start'; place: WorkerPlace }
  | { id: number; op: 'startKubelet'; kubelet: WorkerKubeletPlace }
  | { id: number; op: 'stopKubelet'; name: string }
  | { id: number; op: 'settingUp'; name: string }
  | { id: number; op: 'ready'; name: string }
  | { id: number; op: 'stop'; name: string }
  | { id: number; op: 'cpu' }
  | { id: number; op: 'close' };

export type WorkerReply =
  | {
      id: number;
      ok: true;
      url?: string;
      port?: number;
      ready?: boolean;
      cpuMs?: number;
      settingUp?: number;
    }
  | { id: number; ok: false; error: string };

/** What the thread's kubelets told since the last report, sent without being asked. */
export interface WorkerKubeletReport {
  report: 'kubelets';
  running: PodWait[];
  endedWaiting: PodEndedWaiting[];
}
