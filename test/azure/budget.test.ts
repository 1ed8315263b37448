// ARM's budget as ARM counts it: reads and writes in their own buckets, a
// slow-down when what ARM says is left runs low, 429s pausing their kind
// only (polls included), through the real SDK against the emulator.
import { expect } from 'chai';
import { ArmBudget, lowQuotaPause } from '../../src/azure/arm/budget.ts';
import type { ArmMetricsSink, ThrottleCause } from '../../src/azure/metrics.ts';
import { addNodes, clientFor, RG, startRig } from './helpers.ts';
import type { Rig } from './helpers.ts';

function waits() {
  const seen: Array<[ThrottleCause, number]> = [];
  const sink: ArmMetricsSink = {
    call: () => {},
    throttledWait: (cause, ms) => seen.push([cause, ms]),
    allocated: () => {},
    released: () => {},
    limitReached: () => {},
    forbidden: () => {},
  };
  return { sink, seen };
}

describe('ARM budget: reads and writes apart', function () {
  this.timeout(20_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('pauses a kind for as long as ARM takes to refill to the floor', () => {
    expect(lowQuotaPause('write', 25, 20)).to.equal(0);
    expect(lowQuotaPause('write', 10, 20)).to.equal(1000); // 10 short at 10/s
    expect(lowQuotaPause('read', 0, 25)).to.equal(1000); // 25 short at 25/s
    expect(lowQuotaPause('read', Number.NaN, 25)).to.equal(0);
  });

  it('reads never spend the write budget', async () => {
    rig = await startRig({ quota: false });
    const [vm] = addNodes(rig, 1);
    const budget = new ArmBudget({
      reads: { qps: 1000, burst: 1000 },
      writes: { qps: 1, burst: 1 },
    });
    const { sink, seen } = waits();
    const client = clientFor(rig, { bucket: budget, metrics: sink });
    for (let i = 0; i < 20; i++) await client.networkInterfaces.get(RG, vm!.nicName);
    expect(seen.filter(([c]) => c === 'token-bucket')).to.deep.equal([]);
  });

  it('slows down when ARM says few writes are left, before any 429', async () => {
    rig = await startRig({
      // Writes refill so slowly that which write crosses the floor does not
      // depend on how fast this machine runs (at 10/s, a slow run refilled a
      // token in time and the hold came after the last write instead).
      quota: { reads: { size: 250, perSecond: 25 }, writes: { size: 22, perSecond: 0.01 } },
    });
    const [vm] = addNodes(rig, 1);
    const budget = new ArmBudget({
      reads: { qps: 1000, burst: 1000 },
      writes: { qps: 1000, burst: 1000 },
    });
    const { sink, seen } = waits();
    const client = clientFor(rig, { bucket: budget, metrics: sink });
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    for (let i = 0; i < 4; i++) {
      const now = await client.networkInterfaces.get(RG, vm!.nicName);
      await client.networkInterfaces.createOrUpdate(RG, vm!.nicName, {
        ...now,
        tags: { i: `${i}` },
      });
    }
    // 22 in ARM's bucket, floor 20: the 3rd write leaves 19 → the 4th is held ~100 ms.
    const low = seen.filter(([c]) => c === 'quota-low');
    expect(low.length).to.be.at.least(1);
    const puts = rig.em.requests.filter((r) => r.operation === 'NetworkInterfaces.CreateOrUpdate');
    expect(puts[3]!.at - puts[2]!.at).to.be.at.least(low[0]![1] - 5);
    expect(rig.em.quota!.throttled).to.equal(0);
    expect(nic.name).to.equal(vm!.nicName);
  });

  it('a 429 on a read (a poll) pauses reads only, and waits its Retry-After', async () => {
    rig = await startRig({ quota: false, operationMs: 50, pollRetryAfterSeconds: 0 });
    const [vm] = addNodes(rig, 1);
    const budget = new ArmBudget({
      reads: { qps: 1000, burst: 1000 },
      writes: { qps: 1000, burst: 1000 },
    });
    const { sink, seen } = waits();
    const client = clientFor(rig, { bucket: budget, metrics: sink });
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    rig.em.inject({ operation: 'AsyncOperation.Get', status: 429, retryAfterSeconds: 1 });
    await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      { ...nic, tags: { a: 'b' } },
      {
        updateIntervalInMs: 10,
      },
    );
    const polls = rig.em.requests.filter((r) => r.operation === 'AsyncOperation.Get');
    expect(polls[0]!.status).to.equal(429);
    expect(polls[1]!.at - polls[0]!.at).to.be.at.least(990);
    expect(seen.some(([c]) => c === 'retry-after')).to.equal(true);
    // The writes' bucket was not paused: a write goes at once.
    const t = Date.now();
    await budget.writes.take();
    expect(Date.now() - t).to.be.below(50);
  });
});
