// `bin/pool-monitor fulfiller` as a child process for tests: its JSON log
// lines, its --listen URL, and its exit; and replicas of it, each through its
// own recording proxy as the fulfiller's service account, electing a leader
// on the Lease (the leader and HA process tests).
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { LEASE_NAME } from '../../src/fulfiller/run.ts';
import { startRecordingProxy, type Intercept, type RecordingProxy } from './recording-proxy.ts';
import { NS } from './test-cluster.ts';
import { waitFor } from './wait.ts';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));

export interface LogLine {
  msg?: string;
  ts?: string;
  [key: string]: unknown;
}

export interface FulfillerProcess {
  child: ChildProcess;
  name: string;
  lines: LogLine[];
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** The first log line with this message (waits for it). */
  waitLog(msg: string, timeoutMs?: number, where?: (l: LogLine) => boolean): Promise<LogLine>;
  /** The --listen URL, once it listens. */
  url(): Promise<string>;
}

export function spawnFulfiller(
  name: string,
  args: string[],
  env: Record<string, string> = {},
): FulfillerProcess {
  const child = spawn(BIN, ['fulfiller', '--listen', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, POD_NAME: name, ...env },
  });
  const lines: LogLine[] = [];
  let raw = '';
  let partial = '';
  child.stdout!.on('data', (b: Buffer) => {
    raw += b.toString();
    partial += b.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const p of parts) {
      try {
        lines.push(JSON.parse(p) as LogLine);
      } catch {
        lines.push({ msg: p });
      }
    }
  });
  child.stderr!.on('data', (b: Buffer) => (raw += b.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const waitLog = (msg: string, timeoutMs = 15_000, where: (l: LogLine) => boolean = () => true) =>
    waitFor(`${name}: "${msg}"`, () => lines.find((l) => l.msg === msg && where(l)), timeoutMs);
  return {
    child,
    name,
    lines,
    output: () => raw,
    exited,
    waitLog,
    url: async () => (await waitLog('listening')).url as string,
  };
}

/** Leader-election timings (ms) for the --leader-elect-* flags. */
export interface LeaseTimings {
  lease: number;
  renew: number;
  retry: number;
}

export function leaderElectFlags(t: LeaseTimings): string[] {
  return [
    ...['--leader-elect-lease-duration', `${t.lease}ms`],
    ...['--leader-elect-renew-deadline', `${t.renew}ms`],
    ...['--leader-elect-retry-period', `${t.retry}ms`],
  ];
}

/** The fulfiller Lease's holderIdentity, read with `kc`; undefined while no one holds it. */
export async function leaseHolder(kc: KubeConfig): Promise<string | undefined> {
  const lease = await kc
    .makeApiClient(CoordinationV1Api)
    .readNamespacedLease({ name: LEASE_NAME, namespace: NS })
    .catch(() => undefined);
  return lease?.spec?.holderIdentity || undefined;
}

export interface Replica {
  proc: FulfillerProcess;
  /** Every request of this replica, in order. */
  proxy: RecordingProxy;
}

/** A fulfiller process `name` with `args`, through its own proxy with `token` (and `intercept`). */
export async function startReplica(
  server: ApiServer,
  token: string,
  name: string,
  args: string[],
  intercept?: Intercept,
): Promise<Replica> {
  const proxy = await startRecordingProxy(server, token, intercept);
  return { proxy, proc: spawnFulfiller(name, ['--kubeconfig', proxy.kubeconfigPath, ...args]) };
}

/** Once one of the two holds the Lease and the other knows it: [leader, standby]. */
export async function elected<R extends Replica>(kc: KubeConfig, pair: R[]): Promise<[R, R]> {
  const id = await waitFor('a lease holder', () => leaseHolder(kc), 45_000);
  const leader = pair.find((r) => id.startsWith(`${r.proc.name}_`))!;
  const standby = pair.find((r) => r !== leader)!;
  await standby.proc.waitLog('lease holder');
  return [leader, standby];
}

/** Kills every replica still running (SIGKILL), waits for its exit and closes its proxy; empties the list. */
export async function stopReplicas(replicas: Replica[]): Promise<void> {
  for (const r of replicas.splice(0)) {
    if (r.proc.child.exitCode === null && r.proc.child.signalCode === null)
      r.proc.child.kill('SIGKILL');
    await r.proc.exited;
    await r.proxy.close();
  }
}
