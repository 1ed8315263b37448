// The stateful follower over a real (in-memory) SQLite store, in virtual
// time: the gate on assignments, adoption at the inventory sync, reclaim on
// the timer after the grace, nothing while the pod watch is not synced.
import { expect } from 'chai';
import { TestScheduler } from 'rxjs/testing';
import { followPods, type PodNotice } from '../../src/ipstore/follow-pods.ts';
import type { PodView } from '../../src/ipstore/pod-plan.ts';
import { openIpStore, type SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { captureLogger } from '../monitor/fakes.ts';
import { container, container6, ip6, pod as podRequest } from './helpers.ts';

const GRACE = 5_000;

function pod(name: string, phase = 'Running', ips: string[] = []): PodView {
  return {
    metadata: { name, namespace: 'default' },
    spec: { nodeName: 'n1' },
    status: { phase, ...(ips.length ? { podIPs: ips.map((ip) => ({ ip })) } : {}) },
  };
}

describe('ipstore/follow-pods', () => {
  let store: SqliteIpStore;
  let ts: TestScheduler;
  let notices: (PodNotice & { t: number })[];

  beforeEach(() => {
    store = openIpStore({ memory: true });
    ts = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    notices = [];
  });
  afterEach(() => {
    expect(checkStoreInvariants(store)).to.deep.equal([]);
    store.close();
  });

  const follower = () =>
    followPods({
      store,
      nodeName: 'n1',
      graceMs: GRACE,
      logger: captureLogger().logger,
      scheduler: ts,
      notify: (n) => notices.push({ ...n, t: ts.now() }),
    });

  it('hands nothing out before the pods are listed and the inventory synced; then adopts at once', () => {
    ts.run(() => {
      const f = follower();
      expect(f.notReady()).to.match(/pod watch/);
      f.podsSynced(true);
      f.pods([pod('a', 'Running', ['10.1.0.3']), pod('b', 'Pending')]);
      expect(f.notReady()).to.match(/NodeNetworkConfig/);
      // The store was lost: the status arrives, the store fills, the follower adopts in the same turn.
      store.syncInventory([container(1, [2, 3, 4])]);
      f.inventorySynced();
      expect(f.notReady()).to.equal(undefined);
      expect(store.list(['Assigned']).map((r) => [r.ip, r.pod?.podName])).to.deep.equal([
        ['10.1.0.3', 'a'],
      ]);
      expect(notices.map((n) => [n.type, n.t])).to.deep.equal([['adopted', 0]]);
      f.stop();
    });
  });

  it('reclaims a gone pod after the grace on its timer, a completed one too, never a live one', () => {
    ts.run(() => {
      store.syncInventory([container(1, [2, 3, 4])]);
      for (const n of [1, 2, 3]) store.assign(podRequest(n));
      const f = follower();
      f.podsSynced(true);
      f.inventorySynced();
      f.pods([pod('pod-1'), pod('pod-2', 'Succeeded')]); // pod-3 is gone
      ts.schedule(
        () => expect(f.status().suspects.map((s) => s.reclaimInSeconds)).to.deep.equal([5, 5]),
        0,
      );
      ts.schedule(() => expect(store.counts().Assigned).to.equal(3), GRACE - 1);
      ts.schedule(() => f.stop(), 3 * GRACE);
    });
    expect(
      notices.map((n) => [
        n.type,
        n.t,
        n.type === 'reclaimed' ? [n.reason, n.record.pod?.podName, n.absentMs] : [],
      ]),
    ).to.deep.equal([
      ['reclaimed', GRACE, ['pod-completed', 'pod-2', GRACE]],
      ['reclaimed', GRACE, ['pod-deleted', 'pod-3', GRACE]],
    ]);
    expect(store.list(['Assigned']).map((r) => r.pod?.podName)).to.deep.equal(['pod-1']);
  });

  it("dual-stack: a lost store adopts both of a running pod's status.podIPs; a gone pod's two addresses go together", () => {
    ts.run(() => {
      const f = follower();
      f.podsSynced(true);
      // pod `a` reports both families (IPv4 first, as the kubelet writes them); the store was lost.
      f.pods([pod('a', 'Running', ['10.1.0.3', ip6(1, 3)])]);
      store.syncInventory([container6(1, [2, 3, 4]), container(1, [2, 3, 4])]);
      f.inventorySynced();
      expect(store.list(['Assigned']).map((r) => [r.ip, r.pod?.podName])).to.deep.equal([
        ['10.1.0.3', 'a'],
        [ip6(1, 3), 'a'],
      ]);
      // Neither adopted address is handed out again: pod-1 gets the others.
      expect(store.assign(podRequest(1)).ips.map((r) => r.ip)).to.deep.equal([
        '10.1.0.2',
        ip6(1, 2),
      ]);
      // pod-1 is never on the node: both its addresses are reclaimed together after the grace.
      ts.schedule(() => f.check(), 0);
      ts.schedule(() => f.stop(), 3 * GRACE);
    });
    expect(
      notices.map((n) => [
        n.type,
        n.t,
        n.type === 'reclaimed' ? n.record.ip : n.type === 'adopted' ? n.record.ip : '',
      ]),
    ).to.deep.equal([
      ['adopted', 0, '10.1.0.3'],
      ['adopted', 0, ip6(1, 3)],
      ['reclaimed', GRACE, '10.1.0.2'],
      ['reclaimed', GRACE, ip6(1, 2)],
    ]);
    expect(store.list(['Assigned']).map((r) => r.pod?.podName)).to.deep.equal(['a', 'a']);
  });

  it('a lost pod watch is not a deleted pod: nothing is reclaimed until it lists again, then after the grace', () => {
    ts.run(() => {
      store.syncInventory([container(1, [2, 3])]);
      store.assign(podRequest(1));
      const f = follower();
      f.podsSynced(true);
      f.inventorySynced();
      f.pods([]);
      ts.schedule(() => f.podsSynced(false), 1_000);
      ts.schedule(() => f.podsSynced(true), 4 * GRACE);
      ts.schedule(() => f.stop(), 8 * GRACE);
    });
    expect(notices.map((n) => [n.type, n.t])).to.deep.equal([['reclaimed', 5 * GRACE]]);
  });

  it("a DEL that names no known assignment releases the pod's adopted IPs only once the pod is gone", () => {
    ts.run(() => {
      store.syncInventory([container(1, [2, 3])]);
      const f = follower();
      f.podsSynced(true);
      f.inventorySynced();
      f.pods([pod('a', 'Running', ['10.1.0.2'])]);
      expect(store.counts().Assigned).to.equal(1);
      // Still live: the DEL may be an old sandbox's; the address stays.
      expect(f.releaseAdopted('default', 'a')).to.deep.equal([]);
      f.pods([]);
      expect(f.releaseAdopted('default', 'a').map((r) => r.ip)).to.deep.equal(['10.1.0.2']);
      expect(store.counts().Assigned).to.equal(0);
      // A CNI assignment of the same pod name is not adopted: never released this way.
      store.assign({ ...podRequest(3), podName: 'a' });
      expect(f.releaseAdopted('default', 'a')).to.deep.equal([]);
      f.stop();
    });
  });

  it('a pod back within the grace keeps its IP; a conflict is reported once', () => {
    ts.run(() => {
      store.syncInventory([container(1, [2, 3])]);
      store.assign(podRequest(1));
      const f = follower();
      f.podsSynced(true);
      f.inventorySynced();
      f.pods([pod('x', 'Running', ['192.168.0.1'])]);
      ts.schedule(() => f.pods([pod('pod-1'), pod('x', 'Running', ['192.168.0.1'])]), GRACE - 100);
      ts.schedule(() => f.pods([pod('pod-1'), pod('x', 'Running', ['192.168.0.1'])]), GRACE + 100);
      ts.schedule(() => f.stop(), 4 * GRACE);
    });
    expect(notices.map((n) => n.type)).to.deep.equal(['conflict']);
    expect(store.counts().Assigned).to.equal(1);
  });
});
