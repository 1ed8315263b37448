// How often a quiet cluster's watches are re-opened (docs/decisions/0031):
// the local API server (`pool-monitor apiserver`, its own process, with
// kube-apiserver's one-minute bookmarks unless QUIET_BOOKMARK_S says
// otherwise), the fulfiller and one real sidecar (`pool-monitor sidecar`,
// each a process of its own); once the sidecar is ready and the NNC
// fulfilled, nothing changes for QUIET_MINUTES (5) minutes, and the API
// server's request counters (its /metrics, apiserver_request_total) say how
// many watch and list requests each resource got in that time. Goal: each
// watch re-opened at most once in 5 minutes (the server ends a watch after
// its timeoutSeconds, 5 to 10 minutes), no list. Not part of `make bench`
// (it takes 5 minutes): `make bench-quiet-watches`.
// Run: node bench/quiet-watches.ts
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NAMESPACE, GROUP, NNC_PLURAL, NNC_VERSION } from '../src/nnc/types.ts';

const MINUTES = Number(process.env.QUIET_MINUTES ?? 5);
const BOOKMARK_S = process.env.QUIET_BOOKMARK_S;
const NODE = 'quiet-node';
const NS = DEFAULT_NAMESPACE;
const BIN = fileURLToPath(new URL('../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../manifests/crds/', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Which of the processes watch each resource, and how many watches that makes. */
const WATCHERS: Record<string, { who: string; watches: number }> = {
  pods: { who: 'sidecar (its node)', watches: 1 },
  nodenetworkconfigs: { who: 'sidecar (its NNC) + fulfiller (all)', watches: 2 },
  clustersubnetstates: { who: 'sidecar', watches: 1 },
  nodes: { who: 'fulfiller', watches: 1 },
  leases: { who: 'fulfiller (leader election)', watches: 1 },
};

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A child whose JSON log lines are read; resolves the first line with `msg`. */
function start(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; logged: (msg: string) => Promise<Record<string, unknown>> } {
  const child = spawn(BIN, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  children.push(child);
  const lines: Record<string, unknown>[] = [];
  const waiting: { msg: string; resolve: (l: Record<string, unknown>) => void }[] = [];
  let partial = '';
  child.stdout!.on('data', (b: Buffer) => {
    const parts = (partial + b.toString()).split('\n');
    partial = parts.pop() ?? '';
    for (const p of parts) {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(p) as Record<string, unknown>;
      } catch {
        continue;
      }
      lines.push(rec);
      if ((rec.level === 'warn' || rec.level === 'error') && rec.msg !== 'api server is open')
        console.error(`  [${args[0]}] ${rec.level}: ${String(rec.msg)} ${JSON.stringify(rec)}`);
      for (const w of waiting.filter((x) => x.msg === rec.msg)) w.resolve(rec);
    }
  });
  const logged = (msg: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const found = lines.find((l) => l.msg === msg);
      if (found) return resolve(found);
      waiting.push({ msg, resolve });
      child.once('exit', (code) =>
        reject(new Error(`${args[0]} exited (${code}) before "${msg}"`)),
      );
    });
  return { child, logged };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
}

/** apiserver_request_total by verb and resource (subresources apart), from /metrics. */
async function counters(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^apiserver_request_total\{(.*)\} (\d+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries(
      [...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (labels.subresource) continue;
    const key = `${labels.verb} ${labels.resource}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[2]));
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'bench-quiet-watches-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const apiserver = start([
  'apiserver',
  '--port',
  '0',
  '--crds',
  CRDS,
  '--kubeconfig',
  join(dir, 'kubeconfig'),
  ...(BOOKMARK_S !== undefined ? ['--bookmark-interval', BOOKMARK_S] : []),
]);
const { url, kubeconfig } = (await apiserver.logged('api server listening')) as {
  url: string;
  kubeconfig: string;
};
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const objects = kc.makeApiClient(CustomObjectsApi);
await core.createNode({ body: { metadata: { name: NODE } } });

const fulfiller = start([
  'fulfiller',
  '--kubeconfig',
  kubeconfig,
  '--subnet',
  '10.240.0.0/16',
  '--listen',
  '127.0.0.1:0',
]);
await fulfiller.logged('leader election');
mkdirSync(join(dir, 'state'));
const sidecar = start(
  [
    'sidecar',
    '--kubeconfig',
    kubeconfig,
    '--state-dir',
    join(dir, 'state'),
    '--listen',
    '127.0.0.1:0',
  ],
  { NODENAME: NODE },
);
const listening = await sidecar.logged('node api listening');
const nodeApi = `http://127.0.0.1:${String(listening.port)}`;

// Ready, and the NNC fulfilled at the sidecar's request: from here nothing changes.
const deadline = Date.now() + 60_000;
for (;;) {
  const nnc = (await objects.getNamespacedCustomObject({
    group: GROUP,
    version: NNC_VERSION,
    namespace: NS,
    plural: NNC_PLURAL,
    name: NODE,
  })) as { spec?: { requestedIPCount?: number }; status?: { networkContainers?: unknown[] } };
  const ready = (await fetch(`${nodeApi}/readyz`)).status === 200;
  if (
    ready &&
    (nnc.spec?.requestedIPCount ?? 0) > 0 &&
    (nnc.status?.networkContainers ?? []).length > 0
  )
    break;
  if (Date.now() > deadline)
    throw new Error('the sidecar was not ready with a fulfilled NNC in 60 s');
  await sleep(500);
}
await sleep(2000); // the last writes' watch events delivered

const before = await counters(url);
const t0 = performance.now();
console.log(
  `quiet cluster, bookmarks every ${BOOKMARK_S ?? 60} s: watching the watches for ${MINUTES} min...`,
);
await sleep(MINUTES * 60_000);
const after = await counters(url);
const seconds = (performance.now() - t0) / 1000;

const delta = (key: string): number => (after.get(key) ?? 0) - (before.get(key) ?? 0);
console.log(
  `\nwatch requests in ${seconds.toFixed(0)} s of a quiet cluster (apiserver_request_total)`,
);
console.log('  resource              watches  re-opened  per watch  lists  watched by');
let worst = 0;
for (const [resource, { who, watches }] of Object.entries(WATCHERS)) {
  const reopened = delta(`watch ${resource}`);
  const perWatch = reopened / watches;
  worst = Math.max(worst, perWatch);
  console.log(
    `  ${resource.padEnd(22)}${String(watches).padStart(7)}${String(reopened).padStart(11)}${perWatch.toFixed(1).padStart(11)}${String(delta(`list ${resource}`)).padStart(7)}  ${who}`,
  );
}
const writes = [...after.keys()]
  .filter((k) => !k.startsWith('watch ') && !k.startsWith('list ') && !k.startsWith('get '))
  .map((k) => [k, delta(k)] as const)
  .filter(([, n]) => n > 0);
console.log(
  `  other requests: ${writes.map(([k, n]) => `${k} ${n}`).join(', ') || 'none'} (the Lease's renewals)`,
);
const goal = worst <= 1;
console.log(
  `most re-opens of one watch: ${worst.toFixed(1)} in ${MINUTES} min (goal: at most 1) ${goal ? 'OK' : 'MISSED'}`,
);

await stop(sidecar.child);
await stop(fulfiller.child);
await stop(apiserver.child);
process.exitCode = goal ? 0 : 1;
