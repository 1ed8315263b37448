// Fulfiller failover with the default lease timings (client-go's 15 s lease,
// 10 s renew deadline, 2 s retry): two `bin/pool-monitor fulfiller`
// processes on the local API server, each behind a recording proxy. Prints
// the time from kill -9 of the leader to the standby's first successful
// Lease write, and from SIGTERM of the new leader to the handoff to a fresh
// standby. `node bench/failover.ts [rounds]` (about 20 s a round).
import { CoordinationV1Api } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { startApiServer } from '../harness/apiserver/server.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import { silentLogger } from '../src/log/logger.ts';
import { spawnFulfiller } from '../test/support/fulfiller-process.ts';
import type { FulfillerProcess } from '../test/support/fulfiller-process.ts';
import { startRecordingProxy } from '../test/support/recording-proxy.ts';
import type { RecordingProxy } from '../test/support/recording-proxy.ts';
import { waitFor } from '../test/support/wait.ts';
import { LEASE_NAME } from '../src/fulfiller/run.ts';
import { DEFAULT_NAMESPACE } from '../src/nnc/types.ts';

const rounds = Number(process.argv[2] ?? 1);
const server = await startApiServer({
  crdsDir: fileURLToPath(new URL('../manifests/crds/', import.meta.url)),
  logger: silentLogger(),
});
const { kc } = loadKubeConfig({ kubeconfig: server.kubeconfigPath });
const leases = kc.makeApiClient(CoordinationV1Api);
const holder = async (): Promise<string | undefined> =>
  (
    await leases
      .readNamespacedLease({ name: LEASE_NAME, namespace: DEFAULT_NAMESPACE })
      .catch(() => undefined)
  )?.spec?.holderIdentity || undefined;

interface Replica {
  proc: FulfillerProcess;
  proxy: RecordingProxy;
}
const replicas: Replica[] = [];
let n = 0;
async function replica(): Promise<Replica> {
  const proxy = await startRecordingProxy(server);
  const proc = spawnFulfiller(`replica-${n++}`, ['--kubeconfig', proxy.kubeconfigPath]);
  const r = { proc, proxy };
  replicas.push(r);
  await proc.url();
  return r;
}
const leaderOf = async (): Promise<Replica> => {
  const id = await waitFor('a holder', holder, 30_000);
  return replicas.find((r) => id.startsWith(`${r.proc.name}_`))!;
};
const takeover = (r: Replica, since: number) =>
  waitFor(
    'takeover',
    () => r.proxy.writes(since).find((w) => w.path.includes('/leases') && w.status < 300),
    40_000,
  );

const alive = (r: Replica): boolean =>
  r.proc.child.exitCode === null && r.proc.child.signalCode === null;
const kill9: number[] = [];
const sigterm: number[] = [];
try {
  await replica();
  await replica();
  for (let i = 0; i < rounds; i++) {
    let leader = await leaderOf();
    let standby = replicas.find((r) => r !== leader && alive(r))!;
    await standby.proc.waitLog('lease holder');
    // Let a few renewals pass, as in steady state.
    await new Promise((r) => setTimeout(r, 3000));
    let at = Date.now();
    leader.proc.child.kill('SIGKILL');
    kill9.push((await takeover(standby, at)).at - at);

    const fresh = await replica();
    leader = standby;
    standby = fresh;
    await standby.proc.waitLog('lease holder');
    await new Promise((r) => setTimeout(r, 3000));
    at = Date.now();
    leader.proc.child.kill('SIGTERM');
    sigterm.push((await takeover(standby, at)).at - at);
    await leader.proc.exited;
    await replica();
  }
} finally {
  for (const r of replicas) {
    if (r.proc.child.exitCode === null && r.proc.child.signalCode === null)
      r.proc.child.kill('SIGKILL');
    await r.proc.exited;
    await r.proxy.close();
  }
  await server.close();
}
console.log(
  JSON.stringify({
    bench: 'failover',
    timings: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    kill9TakeoverMs: kill9,
    sigtermHandoffMs: sigterm,
  }),
);
