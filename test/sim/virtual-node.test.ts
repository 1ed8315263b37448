// The simulated control plane (src/sim/virtual-node.ts). Serial, as the
// fulfiller works (src/fulfiller/queue.ts): one round at a time, the spec
// read when a round begins, a change meanwhile waiting for the next. Side by
// side (the idealised model kept for comparison): each spec write is
// fulfilled after the delay with the spec it wrote, never a later one's.
import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { SteppedScheduler } from '../../src/sim/stepped-scheduler.ts';
import { VirtualNode, type ControlPlaneModel } from '../../src/sim/virtual-node.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

type Write = { at: number; request: number; release?: number };

/**
 * A node of 16 IPs whose control plane takes 2 s a round, with requests
 * written at the given times (ms); `release` marks that many of the
 * status's IPs in ipsNotInUse (the first ones), `stale: true` names an id
 * the status does not hold.
 */
async function withNode(
  model: ControlPlaneModel,
  writes: readonly (Write & { stale?: boolean })[],
  check: (node: VirtualNode, advanceTo: (ms: number) => Promise<void>) => Promise<void>,
  initialIps = 16,
): Promise<void> {
  const scheduler = new SteppedScheduler();
  const store = openIpStore({ memory: true, now: () => Math.round(scheduler.now()) });
  try {
    const node = new VirtualNode({
      scheduler,
      store,
      scaler,
      roundMs: () => 2000,
      controlPlane: model,
      initialIps,
    });
    for (const w of writes) {
      scheduler.schedule(() => {
        const held = node.current().status?.networkContainers?.[0]?.ipAssignments ?? [];
        const ipsNotInUse = w.stale
          ? ['00000000-0000-4000-8000-000000000000']
          : held.slice(0, w.release ?? 0).map((a) => a.name);
        void node.writer.writeSpec({ requestedIPCount: w.request, ipsNotInUse });
      }, w.at);
    }
    await check(node, (ms) => scheduler.advanceTo(ms));
  } finally {
    store.close();
  }
}

describe('sim: the serial control plane works a node as the fulfiller does', () => {
  it('a write during a round waits for it, then gets a round of its own', () =>
    withNode(
      'serial',
      [
        { at: 0, request: 32 },
        { at: 1000, request: 48 },
      ],
      async (node, advanceTo) => {
        await advanceTo(1999);
        expect(node.allocated()).to.equal(16);
        await advanceTo(2000);
        expect(node.allocated()).to.equal(32);
        // The second round began at 2 s, when the first ended: 2 s more.
        await advanceTo(3999);
        expect(node.allocated()).to.equal(32);
        await advanceTo(4000);
        expect(node.allocated()).to.equal(48);
        expect(node.rounds).to.equal(2);
      },
    ));

  it('a release under way holds a rise back by the rest of its round', () =>
    withNode(
      'serial',
      [
        { at: 0, request: 16, release: 16 },
        { at: 500, request: 48 },
      ],
      async (node, advanceTo) => {
        await advanceTo(2000);
        expect(node.allocated()).to.equal(16);
        await advanceTo(3999);
        expect(node.allocated()).to.equal(16);
        await advanceTo(4000);
        expect(node.allocated()).to.equal(48);
      },
      32,
    ));

  it('changes made during a round are read together by the next one', () =>
    withNode(
      'serial',
      [
        { at: 0, request: 32 },
        { at: 500, request: 48 },
        { at: 1500, request: 64 },
      ],
      async (node, advanceTo) => {
        await advanceTo(2000);
        expect(node.allocated()).to.equal(32);
        await advanceTo(4000);
        expect(node.allocated()).to.equal(64);
        expect(node.rounds).to.equal(2);
      },
    ));

  it('a round with nothing to add or remove ends at once; the next begins after the minimum interval', () =>
    withNode(
      'serial',
      [
        { at: 0, request: 16, stale: true },
        { at: 10, request: 32 },
      ],
      async (node, advanceTo) => {
        // The stale-id clear's round (0 ms) did nothing; the rise's began at 100 ms.
        await advanceTo(2099);
        expect(node.allocated()).to.equal(16);
        await advanceTo(2100);
        expect(node.allocated()).to.equal(32);
        expect(node.rounds).to.equal(1);
      },
    ));
});

describe('sim: the side-by-side control plane fulfils each write with what it wrote', () => {
  it('a write 1 s after another is fulfilled 2 s after itself, not with the first one', () =>
    withNode(
      'side-by-side',
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

  it('a release does not hold back a rise written after it', () =>
    withNode(
      'side-by-side',
      [
        { at: 0, request: 16, release: 16 },
        { at: 500, request: 48 },
      ],
      async (node, advanceTo) => {
        await advanceTo(2000);
        expect(node.allocated()).to.equal(16);
        await advanceTo(2500);
        expect(node.allocated()).to.equal(48);
      },
      32,
    ));

  for (const model of ['serial', 'side-by-side'] as const) {
    it(`${model}: a rise reversed within the delay is still delivered: a lower request releases nothing by itself`, () =>
      withNode(
        model,
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
  }
});
