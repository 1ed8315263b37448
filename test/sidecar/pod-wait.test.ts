import { expect } from 'chai';
import { PodWaitTracker, podTimestamp } from '../../src/sidecar/pod-wait.ts';

function tracker() {
  let now = 1_000_000;
  const waits: number[] = [];
  let refused = 0;
  const t = new PodWaitTracker(
    { observeWait: (s) => waits.push(s), countRefused: () => (refused += 1) },
    () => now,
  );
  return { t, waits, refused: () => refused, advance: (ms: number) => (now += ms), now: () => now };
}

const pod = (name: string, created?: string, scheduled?: string) => ({
  metadata: { name, namespace: 'ns', ...(created ? { creationTimestamp: created } : {}) },
  spec: { nodeName: 'n' },
  ...(scheduled
    ? {
        status: {
          conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: scheduled }],
        },
      }
    : {}),
});

describe('sidecar/pod-wait (pool_monitor_pod_ip_wait_seconds)', () => {
  it('from the pod appearing on the node to the request that got its address, once per pod', () => {
    const x = tracker();
    x.t.podsNow([pod('a')]);
    x.advance(2500);
    expect(x.t.assigned('ns', 'a')).to.equal(2.5);
    x.advance(1000);
    expect(x.t.assigned('ns', 'a')).to.equal(undefined); // an idempotent repeat is not another wait
    x.t.refused();
    expect(x.waits).to.deep.equal([2.5]);
    expect(x.refused()).to.equal(1);
  });

  it('a pod the sidecar saw late is timed from its own timestamp (PodScheduled, else creation)', () => {
    const x = tracker();
    const iso = (ms: number) => new Date(ms).toISOString();
    x.t.podsNow([
      pod('old', iso(x.now() - 10_000), iso(x.now() - 8_000)),
      pod('new', iso(x.now() - 400)),
    ]);
    x.advance(1000);
    expect(x.t.assigned('ns', 'old')).to.equal(9);
    expect(x.t.assigned('ns', 'new')).to.equal(1);
    expect(podTimestamp(pod('c', '2026-01-01T00:00:00Z'))).to.equal(Date.UTC(2026, 0, 1));
  });

  it('an address handed out before the watch showed the pod still counts; gone pods are forgotten', () => {
    const x = tracker();
    x.t.assigned('ns', 'race');
    x.advance(50);
    x.t.podsNow([pod('race', new Date(x.now() - 1050).toISOString())]);
    expect(x.waits).to.deep.equal([1]);
    x.t.podsNow([]);
    expect(x.t.size()).to.equal(0);
  });

  it('forgets a pod gone from the list, whatever else the list repeats; one back is a new pod', () => {
    const x = tracker();
    const [a, b, c] = [pod('a'), pod('b'), pod('c')];
    x.t.podsNow([a, b]);
    x.t.podsNow([a, a, c]); // b gone, c new: as many pods as before, counted with a twice
    expect(x.t.size()).to.equal(2);
    x.advance(1000);
    expect(x.t.assigned('ns', 'b')).to.equal(undefined); // not tracked: an early address
    x.t.podsNow([a, c, { ...b }]); // the same b again, a new object: its early address counts
    expect(x.waits).to.deep.equal([0]);
    x.advance(500);
    expect(x.t.assigned('ns', 'a')).to.equal(1.5);
    x.t.podsNow([c, { ...c }, { ...pod('h'), spec: { hostNetwork: true } }]);
    expect(x.t.size()).to.equal(1);
  });
});
