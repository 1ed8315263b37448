// The sidecar against the local API server over real HTTP: the scaling
// semantics of docs/design/scaling.md, one scenario each.
import { expect } from 'chai';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  deletePod,
  fulfil,
  getNnc,
  ipOf,
  mergeSpec,
  nncPatches,
  setCss,
  setPodPhase,
  setStatus,
  sidecarOptions,
  sleep,
  startCluster,
  startSidecar,
  tempDir,
  waitFor,
  type Cluster,
  type TestSidecar,
} from './harness.ts';
import { NNC_PLURAL } from '../../src/nnc/types.ts';
import { NNC } from '../support/test-cluster.ts';

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('sidecar integration: scaling semantics', function () {
  this.timeout(20_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let sidecar: TestSidecar | undefined;
  let node = '';
  let counter = 0;

  beforeEach(async () => {
    counter += 1;
    node = `node-${counter}`;
    dir = tempDir();
    c ??= await startCluster();
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

  it('scales up on demand with one write, and its own write coming back causes no echo', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      {
        scaler: DEFAULT_SCALER,
        networkContainers: [container(range(0, 10))],
      },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    await sleep(200);
    const before = nncPatches(c);
    expect(await requested()).to.equal(10); // 0 pods: target 10, already there
    for (let i = 0; i < 8; i++) await createPod(c, `p${counter}-${i}`, node);
    await waitFor('request 20', async () => (await requested()) === 20);
    await sleep(400); // the echo arrives and must not be written again
    expect(nncPatches(c) - before).to.equal(1);
    expect(sidecar.logs.find('scaled pool').length).to.equal(1);
  });

  it('does not reconcile before every input has synced and a valid NNC exists', async () => {
    for (let i = 0; i < 12; i++) await createPod(c, `g${counter}-${i}`, node);
    const atStart = nncPatches(c);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('pods listed', () => sidecar!.monitor.snapshot().demand === 12);
    await sleep(300);
    expect(nncPatches(c)).to.equal(atStart);
    expect(sidecar.monitor.snapshot().reconciles).to.equal(0);
    expect(sidecar.monitor.snapshot().ready).to.equal(false);
    const res = await fetch(`${sidecar.url}/readyz`);
    expect(res.status).to.equal(503);
    const patchesBefore = nncPatches(c);
    // An NNC without status: still not ready, nothing written.
    await createNnc(c, node, { requestedIPCount: 0 });
    await sleep(300);
    expect(sidecar.monitor.snapshot().ready).to.equal(false);
    expect(nncPatches(c)).to.equal(patchesBefore);
    await setStatus(c, node, { scaler: DEFAULT_SCALER, networkContainers: [container([])] });
    await waitFor('ready', async () => (await fetch(`${sidecar!.url}/readyz`)).status === 200);
    await waitFor('request 20', async () => (await requested()) === 20);
  });

  const pendingIds = (): string[] => sidecar!.store.pendingReleaseIds();
  const specIds = async (): Promise<string[]> =>
    [...((await getNnc(c, node)).spec?.ipsNotInUse ?? [])].sort();

  it('scales down: marks PendingRelease, writes ipsNotInUse, then clears the stale ids with one write', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 30 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 30))] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('request 10', async () => (await requested()) === 10);
    expect(pendingIds()).to.have.length(20);
    expect(await specIds()).to.deep.equal(pendingIds());
    expect(sidecar.store.counts().Available).to.equal(10);
    await sleep(200);
    const before = nncPatches(c);
    await fulfil(c, node); // the control plane frees the 20 IPs
    await waitFor('ipsNotInUse cleared', async () => (await specIds()).length === 0);
    await waitFor('store follows status', () => sidecar!.store.counts().PendingRelease === 0);
    await sleep(300);
    expect(nncPatches(c) - before).to.equal(1);
    expect(await requested()).to.equal(10);
    expect(sidecar.store.counts().Available).to.equal(10);
  });

  it('clears stale ipsNotInUse found at start with one write even when the request is right', async () => {
    const gone = '00000000-0000-4000-8000-0000000000ff';
    await createNnc(
      c,
      node,
      { requestedIPCount: 10, ipsNotInUse: [gone] },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    const before = nncPatches(c);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('stale id cleared', async () => (await specIds()).length === 0);
    await sleep(300);
    expect(nncPatches(c) - before).to.equal(1);
    expect(await requested()).to.equal(10);
  });

  it('follows completed Job pods: Succeeded/Failed pods and hostNetwork pods stop counting', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 20 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 20))] },
    );
    for (let i = 0; i < 12; i++) await createPod(c, `j${counter}-${i}`, node);
    await createPod(c, `h${counter}`, node, { hostNetwork: true });
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('demand 12', () => sidecar!.monitor.snapshot().demand === 12);
    expect(await requested()).to.equal(20);
    for (let i = 0; i < 6; i++) await setPodPhase(c, `j${counter}-${i}`, 'Succeeded');
    await setPodPhase(c, `j${counter}-6`, 'Failed');
    await deletePod(c, `j${counter}-7`);
    await waitFor('demand 4', () => sidecar!.monitor.snapshot().demand === 4);
    await waitFor('request 10', async () => (await requested()) === 10);
    expect(pendingIds()).to.have.length(10);
  });

  it('exhaustion: only the CSS named as the node subnet counts (batch 1, buffer 1)', async () => {
    const subnet = `subnet-${node}`;
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10), subnet)] },
    );
    for (let i = 0; i < 3; i++) await createPod(c, `x${counter}-${i}`, node);
    await setCss(c, `other-${node}`, true);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('demand 3', () => sidecar!.monitor.snapshot().demand === 3);
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    await sleep(200);
    expect(sidecar.monitor.snapshot().exhausted).to.equal(false);
    expect(await requested()).to.equal(10);
    await setCss(c, subnet, true);
    await waitFor('request 4', async () => (await requested()) === 4); // 1 × ceil(1 + 3)
    expect(sidecar.logs.find('exhaustion update').at(-1)?.exhausted).to.equal(true);
    await setCss(c, subnet, false);
    await waitFor('request 10 again', async () => (await requested()) === 10);
    await setCss(c, `other-${node}`, false);
  });

  it('exhaustion with --subnet-state any: any exhausted CSS in the namespace counts', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10), `subnet-${node}`)] },
    );
    for (let i = 0; i < 3; i++) await createPod(c, `y${counter}-${i}`, node);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path, { subnetState: 'any' }));
    await waitFor('demand 3', () => sidecar!.monitor.snapshot().demand === 3);
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    expect(sidecar.monitor.snapshot().exhausted).to.equal(false);
    await setCss(c, `unrelated-${node}`, true);
    await waitFor('request 4', async () => (await requested()) === 4);
    await setCss(c, `unrelated-${node}`, false);
  });

  it('corrects out-of-band spec edits on the next reconcile', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    await sleep(200);
    await mergeSpec(c, node, { requestedIPCount: 57 });
    await waitFor('request back to 10', async () => (await requested()) === 10);
    await mergeSpec(c, node, { ipsNotInUse: [ipOf(3).name] });
    await waitFor('ipsNotInUse back to empty', async () => (await specIds()).length === 0);
    expect(sidecar.store.counts().PendingRelease).to.equal(0);
    const writes = sidecar.monitor.snapshot().writes;
    await sleep(400);
    expect(sidecar.monitor.snapshot().writes).to.equal(writes); // settled: no echo loop
  });

  it('an NNC deleted and recreated (new uid) gets its spec written again by the next reconcile', async () => {
    const status = { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] };
    await createNnc(c, node, { requestedIPCount: 10 }, status);
    // No tick in this test: every reconcile below is caused by the NNC itself.
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path), { tickMs: 600_000 });
    for (let i = 0; i < 12; i++) await createPod(c, `u${counter}-${i}`, node);
    await waitFor('request 20', async () => (await requested()) === 20);
    await sleep(300); // the echo of our write comes back, and is not written again
    const oldUid = (await getNnc(c, node)).metadata.uid;
    const outcomes: { kind: string; from: number; to: number }[] = [];
    const sub = sidecar.monitor.outcomes$.subscribe((o) => outcomes.push(o));
    try {
      await c.objects.deleteNamespacedCustomObject({ ...NNC, name: node });
      await createNnc(c, node, { requestedIPCount: 0 }, status);
      expect((await getNnc(c, node)).metadata.uid).to.not.equal(oldUid);
      await waitFor('request 20 again', async () => (await requested()) === 20, 5_000);
    } finally {
      sub.unsubscribe();
    }
    expect(outcomes[0]).to.include({ kind: 'scaled', from: 0, to: 20 });
  });

  for (const [status, retryAfter] of [
    [500, undefined],
    [409, undefined],
    [429, 1],
  ] as const) {
    it(`retries a ${status} on the NNC patch with backoff${retryAfter ? ' honouring Retry-After' : ''}`, async () => {
      await createNnc(
        c,
        node,
        { requestedIPCount: 10 },
        { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
      );
      sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
      await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
      await sleep(150);
      c.server.faults.inject({
        verb: 'patch',
        resource: NNC_PLURAL,
        status,
        times: 2,
        ...(retryAfter ? { retryAfterSeconds: retryAfter } : {}),
      });
      const started = Date.now();
      for (let i = 0; i < 8; i++) await createPod(c, `f${counter}-${i}`, node);
      await waitFor('request 20', async () => (await requested()) === 20);
      const took = Date.now() - started;
      const failures = sidecar.logs.find('reconcile failed');
      expect(failures).to.have.length(2);
      expect(failures.map((f) => f.statusCode)).to.deep.equal([status, status]);
      const delays = failures.map((f) => f.retryInMs as number);
      if (retryAfter) {
        expect(delays.every((d) => d >= retryAfter * 1000)).to.equal(true);
        expect(took).to.be.greaterThanOrEqual(2 * retryAfter * 1000 - 50);
      } else {
        expect(delays[1]).to.be.greaterThan(delays[0]! * 1.2); // grows
      }
      const metrics = await (await fetch(`${sidecar.url}/metrics`)).text();
      expect(metrics).to.match(/pool_monitor_nnc_writes_total\{result="failure"\} 2/);
      expect(metrics).to.match(/pool_monitor_nnc_writes_total\{result="success"\} 1/);
    });
  }

  it('recovers demand after dropped watches and 410 Gone', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 10))] },
    );
    for (let i = 0; i < 3; i++) await createPod(c, `w${counter}-${i}`, node);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('demand 3', () => sidecar!.monitor.snapshot().demand === 3);
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    c.server.faults.dropWatches('pods');
    for (let i = 3; i < 9; i++) await createPod(c, `w${counter}-${i}`, node);
    await waitFor('demand 9', () => sidecar!.monitor.snapshot().demand === 9);
    // History forgotten while the watch is down: the resume gets 410 Gone and relists.
    c.server.faults.compactHistory();
    c.server.faults.dropWatches();
    await deletePod(c, `w${counter}-0`);
    await createPod(c, `w${counter}-9`, node);
    await createPod(c, `w${counter}-10`, node);
    c.server.faults.compactHistory();
    c.server.faults.dropWatches();
    await waitFor('demand 10', () => sidecar!.monitor.snapshot().demand === 10);
    await waitFor('request 20', async () => (await requested()) === 20);
  });

  it('restores PendingRelease from spec.ipsNotInUse after a restart and marks nothing twice', async () => {
    await createNnc(
      c,
      node,
      { requestedIPCount: 30 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(0, 30))] },
    );
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('request 10', async () => (await requested()) === 10);
    const marked = await specIds();
    expect(marked).to.have.length(20);
    await sidecar.stop();
    // Same state dir.
    const before = nncPatches(c);
    sidecar = await startSidecar(c, sidecarOptions(c, node, dir.path));
    await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
    await sleep(300);
    expect(pendingIds()).to.deep.equal(marked);
    expect(nncPatches(c)).to.equal(before);
    await sidecar.stop();
    // A fresh state dir: the store is rebuilt from the NNC alone.
    const fresh = tempDir();
    try {
      sidecar = await startSidecar(c, sidecarOptions(c, node, fresh.path));
      await waitFor('ready', () => sidecar!.monitor.snapshot().ready);
      await sleep(300);
      expect(pendingIds()).to.deep.equal(marked);
      expect(nncPatches(c)).to.equal(before);
      await sidecar.stop();
    } finally {
      sidecar = undefined;
      fresh.remove();
    }
  });
});
