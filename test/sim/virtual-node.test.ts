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

describe('sim: the virtual node fulfils each write with what it wrote', () => {
  it('a write 1 s after another is fulfilled 2 s after itself, not with the first one', async () => {
    const scheduler = new SteppedScheduler();
    const store = openIpStore({ memory: true, now: () => Math.round(scheduler.now()) });
    try {
      const node = new VirtualNode({
        scheduler,
        store,
        scaler,
        fulfilDelayMs: 2000,
        initialIps: 16,
      });
      const write = (requestedIPCount: number) => () =>
        void node.writer.writeSpec({ requestedIPCount, ipsNotInUse: [] });
      scheduler.schedule(write(32), 0);
      scheduler.schedule(write(48), 1000);
      await scheduler.advanceTo(1999);
      expect(node.allocated()).to.equal(16);
      await scheduler.advanceTo(2000);
      // The latest spec (48) was written 1 s ago: it is not delivered early.
      expect(node.allocated()).to.equal(32);
      await scheduler.advanceTo(3000);
      expect(node.allocated()).to.equal(48);
    } finally {
      store.close();
    }
  });

  it('a rise reversed within the delay is still delivered: a lower request releases nothing by itself', async () => {
    const scheduler = new SteppedScheduler();
    const store = openIpStore({ memory: true, now: () => Math.round(scheduler.now()) });
    try {
      const node = new VirtualNode({
        scheduler,
        store,
        scaler,
        fulfilDelayMs: 2000,
        initialIps: 16,
      });
      scheduler.schedule(
        () => void node.writer.writeSpec({ requestedIPCount: 48, ipsNotInUse: [] }),
        0,
      );
      scheduler.schedule(
        () => void node.writer.writeSpec({ requestedIPCount: 16, ipsNotInUse: [] }),
        500,
      );
      await scheduler.advanceTo(5000);
      // Only ipsNotInUse takes IPs away (the CNS contract): the 32 stay until released.
      expect(node.allocated()).to.equal(48);
      expect(node.current().spec?.requestedIPCount).to.equal(16);
    } finally {
      store.close();
    }
  });
});
