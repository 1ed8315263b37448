// The simulated control plane (src/sim/virtual-node.ts): each spec write is
// fulfilled after the delay with the spec it wrote, never a later one's.
import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { SteppedScheduler } from '../../src/sim/stepped-scheduler.ts';
import { VirtualNode } from '../../src/sim/virtual-node.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

/** A node of 16 IPs whose control plane takes 2 s, with requests written at the given times (ms). */
async function withNode(
  writes: readonly { at: number; request: number }[],
  check: (node: VirtualNode, advanceTo: (ms: number) => Promise<void>) => Promise<void>,
): Promise<void> {
  const scheduler = new SteppedScheduler();
  const store = openIpStore({ memory: true, now: () => Math.round(scheduler.now()) });
  try {
    const node = new VirtualNode({ scheduler, store, scaler, fulfilDelayMs: 2000, initialIps: 16 });
    for (const w of writes) {
      scheduler.schedule(
        () => void node.writer.writeSpec({ requestedIPCount: w.request, ipsNotInUse: [] }),
        w.at,
      );
    }
    await check(node, (ms) => scheduler.advanceTo(ms));
  } finally {
    store.close();
  }
}

describe('sim: the virtual node fulfils each write with what it wrote', () => {
  it('a write 1 s after another is fulfilled 2 s after itself, not with the first one', () =>
    withNode(
      [
        { at: 0, request: 32 },
        { at: 1000, request: 48 },
      ],
      async (node, advanceTo) => {
        await advanceTo(1999);
        expect(node.allocated()).to.equal(16);
        await advanceTo(2000);
        // The latest spec (48) was written 1 s ago: it is not delivered early.
        expect(node.allocated()).to.equal(32);
        await advanceTo(3000);
        expect(node.allocated()).to.equal(48);
      },
    ));

  it('a rise reversed within the delay is still delivered: a lower request releases nothing by itself', () =>
    withNode(
      [
        { at: 0, request: 48 },
        { at: 500, request: 16 },
      ],
      async (node, advanceTo) => {
        await advanceTo(5000);
        // Only ipsNotInUse takes IPs away (the CNS contract): the 32 stay until released.
        expect(node.allocated()).to.equal(48);
        expect(node.current().spec?.requestedIPCount).to.equal(16);
      },
    ));
});
