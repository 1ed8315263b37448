// Shared fixtures for the sidecar's integration tests: the test cluster
// (test/support/test-cluster.ts) as strict as a real cluster with the access
// objects of manifests/ applied (test/support/rbac.ts), NNC/pod/CSS builders
// on its coordinates, a tiny fulfiller that makes the NNC status follow the
// spec, and a sidecar started in-process with short timings and its own
// token bound to its Node: it gets exactly what manifests/ grants, and
// close() fails when it was refused anything.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import {
  NNC_PLURAL,
  type NetworkContainer,
  type NodeNetworkConfig,
  type ScalerSpec,
} from '../../src/nnc/types.ts';
import type { SidecarOptions } from '../../src/sidecar/options.ts';
import { runSidecar, type RunSidecarDeps, type RunningSidecar } from '../../src/sidecar/run.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { CSS, cssObject, NNC, NS, type TestCluster } from '../support/test-cluster.ts';
import { CRDS_DIR, sleep, waitFor } from '../support/wait.ts';

export { CRDS_DIR, NS, sleep, waitFor };

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A test cluster; `strict` (the same cluster) when RBAC is on, as startCluster starts it. */
export interface Cluster extends TestCluster {
  /** The manifests' access (absent: every client is the admin). */
  strict?: StrictCluster;
}

export async function startCluster(): Promise<Cluster> {
  const strict = await strictCluster();
  return { ...strict, strict };
}

export const DEFAULT_SCALER: ScalerSpec = {
  batchSize: 10,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

/** IP number i of the node's subnet: 10.10.x.y, with a uuid-shaped stable id. */
export function ipOf(i: number): { name: string; ip: string } {
  const hex = i.toString(16).padStart(12, '0');
  return {
    name: `00000000-0000-4000-8000-${hex}`,
    ip: `10.10.${Math.floor(i / 250)}.${(i % 250) + 2}`,
  };
}

export function container(ips: number[], subnetName = 'subnet-a'): NetworkContainer {
  return {
    id: 'nc-dyn-1',
    assignmentMode: 'dynamic',
    type: 'VNETBlock',
    primaryIP: '10.10.200.1',
    subnetName,
    subnetAddressSpace: '10.10.0.0/16',
    defaultGateway: '10.10.0.1',
    version: 1,
    nodeIP: '10.0.0.4',
    ipAssignments: ips.map(ipOf),
  };
}

export async function createNnc(
  c: Cluster,
  node: string,
  spec: { requestedIPCount: number; ipsNotInUse?: string[] },
  status?: NodeNetworkConfig['status'],
): Promise<void> {
  await c.createNnc(node, spec);
  if (status) await setStatus(c, node, status);
}

export async function setStatus(
  c: Cluster,
  node: string,
  status: NodeNetworkConfig['status'],
): Promise<void> {
  const current = await getNnc(c, node);
  await c.objects.replaceNamespacedCustomObjectStatus({
    ...NNC,
    name: node,
    body: { ...current, status },
  });
}

/** The node's NNC; throws when there is none (waitFor takes that as "not yet"). */
export async function getNnc(c: Cluster, node: string): Promise<NodeNetworkConfig> {
  return (await c.objects.getNamespacedCustomObject({ ...NNC, name: node })) as NodeNetworkConfig;
}

/** An out-of-band edit of the spec, as `kubectl patch --type merge` would do. */
export async function mergeSpec(c: Cluster, node: string, spec: object): Promise<void> {
  await c.objects.patchNamespacedCustomObject({ ...NNC, name: node, body: { spec } }, MERGE);
}

/**
 * A one-shot fulfiller: the status holds `requestedIPCount` IPs, the ones in
 * ipsNotInUse dropped and new ones appended with fresh numbers.
 */
export async function fulfil(c: Cluster, node: string, scaler = DEFAULT_SCALER): Promise<number[]> {
  const nnc = await getNnc(c, node);
  const want = nnc.spec?.requestedIPCount ?? 0;
  const notInUse = new Set(nnc.spec?.ipsNotInUse ?? []);
  const have = (nnc.status?.networkContainers?.[0]?.ipAssignments ?? [])
    .filter((a) => !notInUse.has(a.name))
    .map((a) => Number.parseInt(a.name.slice(-12), 16));
  let next =
    Math.max(-1, ...have, ...[...notInUse].map((n) => Number.parseInt(n.slice(-12), 16))) + 1;
  const ips = have.slice(0, want);
  while (ips.length < want) ips.push(next++);
  const subnet = nnc.status?.networkContainers?.[0]?.subnetName ?? 'subnet-a';
  await setStatus(c, node, { scaler, networkContainers: [container(ips, subnet)] });
  return ips;
}

export async function createPod(
  c: Cluster,
  name: string,
  node: string,
  opts: { hostNetwork?: boolean; phase?: string; namespace?: string } = {},
): Promise<void> {
  const namespace = opts.namespace ?? 'default';
  await c.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        nodeName: node,
        ...(opts.hostNetwork ? { hostNetwork: true } : {}),
        containers: [{ name: 'app', image: 'registry.local/app:1' }],
      },
    },
  });
  if (opts.phase) await setPodPhase(c, name, opts.phase, namespace);
}

export async function setPodPhase(
  c: Cluster,
  name: string,
  phase: string,
  namespace = 'default',
): Promise<void> {
  await c.core.patchNamespacedPodStatus({ name, namespace, body: { status: { phase } } }, MERGE);
}

export async function deletePod(c: Cluster, name: string, namespace = 'default'): Promise<void> {
  await c.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
}

export async function setCss(c: Cluster, name: string, exhausted: boolean): Promise<void> {
  try {
    await c.objects.createNamespacedCustomObject({ ...CSS, body: cssObject(name) });
  } catch {
    // exists already
  }
  await c.objects.patchNamespacedCustomObjectStatus(
    { ...CSS, name, body: { status: { exhausted, timestamp: new Date().toISOString() } } },
    MERGE,
  );
}

export function tempDir(prefix = 'sidecar-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export function sidecarOptions(
  c: Cluster,
  node: string,
  stateDir: string,
  extra: Partial<SidecarOptions> = {},
): SidecarOptions {
  return {
    nodeName: node,
    kubeconfig: c.server.kubeconfigPath,
    namespace: NS,
    stateDir,
    listenHost: '127.0.0.1',
    listenPort: 0,
    logLevel: 'debug',
    subnetState: 'name',
    releaseDelay: { kind: 'fixed', seconds: 0 },
    dryRun: false,
    ...extra,
  };
}

export const FAST: RunSidecarDeps = {
  defaultMetrics: false,
  tickMs: 1000,
  writeWindowMs: 30,
  writeBackoff: { initialMs: 40, maxMs: 400, jitter: 0.2 },
  watchBackoff: { initialMs: 30, maxMs: 300 },
  apiCloseGraceMs: 500,
};

export interface TestSidecar extends RunningSidecar {
  logs: CaptureTransport;
}

export async function startSidecar(
  c: Cluster,
  options: SidecarOptions,
  deps: RunSidecarDeps = {},
): Promise<TestSidecar> {
  const logs = new CaptureTransport();
  const logger = createLogger({ level: 'debug', transports: [logs] });
  const kc = c.strict ? await c.strict.sidecarKubeConfig(options.nodeName) : c.kc;
  const s = await runSidecar(options, { ...FAST, ...deps, logger, kc });
  return Object.assign(s, { logs });
}

/** NNC spec patches (server-side apply) made so far, counted by the API server. */
export function nncPatches(c: Cluster): number {
  return c.server.counters().count('patch', NNC_PLURAL);
}

export const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));

export interface SidecarProcess {
  child: ChildProcess;
  /** Every stdout line so far. */
  lines: string[];
  stderr(): string;
  /** Resolves with the node API base URL once it listens. */
  listening: Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A structured (JSON) log line of a sidecar process. */
export interface LogLine {
  msg?: string;
  ts?: string;
  [field: string]: unknown;
}

/** The process's JSON log lines with this message so far (lines not JSON are the CLI tests' to check). */
export function logLines<L extends LogLine = LogLine>(p: SidecarProcess, msg: string): L[] {
  const out: L[] = [];
  for (const line of p.lines) {
    try {
      const rec = JSON.parse(line) as L;
      if (rec.msg === msg) out.push(rec);
    } catch {
      // not JSON
    }
  }
  return out;
}

/** Sidecar processes spawned and not yet exited (killStraySidecars ends them). */
const running = new Set<ChildProcess>();

/**
 * Kills every sidecar process a test spawned that is still running: a test
 * that fails half-way must not leave one behind, which would keep mocha alive.
 */
export function killStraySidecars(): void {
  for (const child of running) child.kill('SIGKILL');
}

/** Runs `bin/pool-monitor sidecar` with the given flags. */
export function spawnSidecar(args: string[], env: NodeJS.ProcessEnv = {}): SidecarProcess {
  const child = spawn(BIN, ['sidecar', ...args], {
    // bin/pool-monitor keeps Node's compile cache in node_modules/.cache.
    env: {
      ...process.env,
      NODENAME: '',
      KUBECONFIG: '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let err = '';
  let buf = '';
  let onListen: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => (onListen = resolve));
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buf += chunk;
    let at: number;
    while ((at = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, at);
      buf = buf.slice(at + 1);
      lines.push(line);
      try {
        const rec = JSON.parse(line) as { msg?: string; port?: number; host?: string };
        if (rec.msg === 'node api listening') onListen(`http://127.0.0.1:${rec.port}`);
      } catch {
        // checked by the tests
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  running.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, lines, stderr: () => err, listening, exited };
}
