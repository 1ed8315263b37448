// `--release-delay auto` in the sidecar against the local API server: what the
// policy learned is read back from the node store at start, and /debug/pool
// says what it holds back and why.
import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { Observation } from '../../src/scaling/policies/policy.ts';
import {
  container,
  createNnc,
  DEFAULT_SCALER,
  getNnc,
  sidecarOptions,
  startCluster,
  startSidecar,
  tempDir,
  waitFor,
  type Cluster,
  type TestSidecar,
} from './harness.ts';

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Ten times: 32 IPs needed for 10 s, then 16 for 20 s; the last rise to 32 five seconds ago. */
function flappingHistory(now: number): Observation[] {
  const rows: Observation[] = [];
  let at = now - 5_000 - 10 * 30_000;
  for (let i = 0; i < 10; i += 1) {
    rows.push({ at, demand: 9, target: 32 }, { at: at + 10_000, demand: 0, target: 16 });
    at += 30_000;
  }
  rows.push({ at, demand: 9, target: 32 });
  return rows;
}

describe('sidecar integration: --release-delay auto', function () {
  this.timeout(20_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let sidecar: TestSidecar | undefined;
  let counter = 0;
  let node = '';

  beforeEach(async () => {
    counter += 1;
    node = `auto-${counter}`;
    dir = tempDir();
    c ??= await startCluster();
    // The node asked for 32 IPs (9 pods) before; now it has none.
    await createNnc(
      c,
      node,
      { requestedIPCount: 32 },
      { scaler: { ...DEFAULT_SCALER, batchSize: 16 }, networkContainers: [container(range(32))] },
    );
  });
  afterEach(async () => {
    await sidecar?.stop();
    sidecar = undefined;
    dir.remove();
  });
  after(async () => {
    await c?.close();
  });

  const requested = async (): Promise<number | undefined> =>
    (await getNnc(c, node)).spec?.requestedIPCount;

  it('reads its history back at start, and keeps its idle budget from the first second: /debug/pool and /metrics show the account', async () => {
    const store = openIpStore({ stateDir: dir.path });
    store.poolHistory().append(flappingHistory(Date.now()));
    store.close();
    sidecar = await startSidecar(
      c,
      sidecarOptions(c, node, dir.path, { releaseDelay: { kind: 'auto' }, idleBudget: 1.2 }),
    );
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    expect(sidecar.logs.find('sidecar started')[0]).to.include({
      releaseDelay: 'auto',
      idleBudget: 1.2,
      historyLoaded: 21,
    });
    // The history says level 32 comes back, but keeping it is paid from idle
    // IP-seconds earned against CNS v2 since start, and none are yet: the
    // pool follows the CNS v2 target.
    await waitFor('request 16', async () => (await requested()) === 16);
    const pool = (await (await fetch(`${sidecar.url}/debug/pool`)).json()) as {
      releasePolicy: { policy: string; account: Record<string, unknown> | null };
    };
    expect(pool.releasePolicy.policy).to.equal('auto');
    expect(pool.releasePolicy.account).to.include({ budget: 1.2 });
    expect(pool.releasePolicy.account).to.have.property('cnsV2Writes').that.is.a('number');
    expect(pool.releasePolicy.account).to.have.property('writesSaved').that.is.a('number');
    const metrics = await (await fetch(`${sidecar.url}/metrics`)).text();
    expect(metrics).to.match(/^pool_monitor_idle_budget_ratio\{policy="auto"\} 1\.2$/m);
    expect(metrics).to.match(
      /^pool_monitor_idle_ip_seconds\{policy="auto",pool="cns_v2",span="start"\} /m,
    );
  });

  it('without that history it releases at once, as CNS v2 does, and records what it saw', async () => {
    sidecar = await startSidecar(
      c,
      sidecarOptions(c, node, dir.path, { releaseDelay: { kind: 'auto' } }),
    );
    await waitFor('request 16', async () => (await requested()) === 16);
    await sidecar.stop();
    const store = openIpStore({ stateDir: dir.path });
    expect(store.poolHistory().load(0)).to.have.length.of.at.least(1);
    expect(store.poolHistory().load(0)[0]).to.include({ demand: 0, target: 16 });
    store.close();
  });
});
