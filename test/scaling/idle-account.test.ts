import { expect } from 'chai';
import fc from 'fast-check';
import {
  advanceAccount,
  budgetLeft,
  BUCKET_MS,
  BUCKETS,
  emptyAccount,
  observeAccount,
  windowTotals,
  type IdleAccount,
} from '../../src/scaling/policies/budget/idle-account.ts';
import type { Observation } from '../../src/scaling/policies/policy.ts';

const fold = (obs: readonly Observation[]): IdleAccount =>
  obs.reduce(observeAccount, emptyAccount());

/** Integral (IP-s) of max(0, allocated - demand) over [from, to), each observation holding until the next. */
function heldIdle(obs: readonly Observation[], from: number, to: number): number {
  let sum = 0;
  obs.forEach((o, i) => {
    const end = Math.min(to, obs[i + 1]?.at ?? to);
    const start = Math.max(from, o.at);
    if (end > start && o.allocated !== undefined) {
      sum += (Math.max(0, o.allocated - o.demand) * (end - start)) / 1000;
    }
  });
  return sum;
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));

describe('scaling/policies/budget/idle-account', () => {
  it('counts CNS v2 at its target once the fulfilment lag is known: a release shows after the lag', () => {
    // A scale-up fulfilled in 2 s teaches the lag; then the target falls 32 -> 16 at 100 s.
    const b = fold([
      { at: 0, demand: 10, target: 32, allocated: 16 },
      { at: 2_000, demand: 10, target: 32, allocated: 32 },
      { at: 100_000, demand: 5, target: 16, allocated: 32 },
    ]);
    expect(b.lagMs).to.equal(2_000);
    const later = advanceAccount(b, 110_000);
    // CNS v2: min(32, 16) - 10 = 6 for 2 s (no lag known yet: its rise is capped at
    // the pool's), 22 for 98 s, then 27 for 2 s (its release shows after the lag), 11 for 8 s.
    expect(later.total.cns).to.be.closeTo(6 * 2 + 22 * 98 + 27 * 2 + 11 * 8, 1e-6);
    // The pool held 32 all along after 2 s: 6 * 2 + 22 * 98 + 27 * 10.
    expect(later.total.held).to.be.closeTo(6 * 2 + 22 * 98 + 27 * 10, 1e-6);
  });

  it('history replayed without `allocated` moves the clock but counts nothing', () => {
    const a = fold([
      { at: 0, demand: 3, target: 16 },
      { at: 60_000, demand: 20, target: 32 },
    ]);
    const later = advanceAccount(a, 120_000);
    expect(later.total).to.deep.equal({ held: 0, cns: 0 });
    expect(later.since).to.equal(undefined);
    expect(budgetLeft(later, 2)).to.equal(0);
  });

  it("counts CNS v2's writes as its monitor makes them (one per change, spaced by the write window, a release twice) and its churn as its status follows", () => {
    const a = fold([
      { at: 0, demand: 0, target: 16, allocated: 16 },
      { at: 1_000, demand: 20, target: 32, allocated: 16 }, // write 1
      { at: 1_100, demand: 40, target: 48, allocated: 16 }, // within 500 ms: waits
      { at: 1_200, demand: 60, target: 64, allocated: 16 }, // still waiting
      { at: 5_000, demand: 60, target: 64, allocated: 64 }, // the held write went out at 1.5 s: write 2
      { at: 9_000, demand: 5, target: 16, allocated: 64 }, // a release: writes 3 and 4
    ]);
    expect(a.cnsWrites).to.equal(4);
    // Its status: 16 -> 32 -> 64 as written (no lag measured yet); the release is
    // fulfilled after the lag measured since (the 64 came 3.8 s after the last rise).
    expect(a.lagMs).to.equal(3_800);
    expect(a.cnsChurn).to.equal(16 + 32);
    expect(advanceAccount(a, 12_799).cnsChurn).to.equal(16 + 32);
    expect(advanceAccount(a, 12_800).cnsChurn).to.equal(16 + 32 + 48);
    expect(a.heldChurn).to.equal(48);
  });

  it("a request CNS v2 reverses within the control plane's lag is still fulfilled, and its surplus released by a write of its own", () => {
    let a = fold([
      { at: 0, demand: 10, target: 32, allocated: 16 },
      { at: 2_000, demand: 10, target: 32, allocated: 32 }, // lag 2 s
      { at: 60_000, demand: 90, target: 112, allocated: 32 }, // a spike ...
      { at: 61_000, demand: 10, target: 32, allocated: 32 }, // ... gone within the lag
    ]);
    // 32 at 0, 112 at 60 s, 32 at 61 s (nothing to release yet: 32 held); at
    // 62 s the control plane delivers the 112 it was asked for (it read the
    // spec when it started), and CNS v2 releases the 80 (2 writes), gone at 64 s.
    expect(a.cnsWrites).to.equal(3);
    a = advanceAccount(a, 63_000);
    expect(a.cnsStatus).to.equal(112);
    expect(a.cnsWrites).to.equal(5);
    a = advanceAccount(a, 70_000);
    expect(a.cnsStatus).to.equal(32);
    expect(a.cnsChurn).to.equal(16 + 80 + 80);
    // Idle beyond a steady 32 for 10 pods: 80 more from 62 s to 64 s, and
    // none of the 22 during the spike's second (90 pods on 32 IPs).
    const idleBefore = fold([
      { at: 0, demand: 10, target: 32, allocated: 16 },
      { at: 2_000, demand: 10, target: 32, allocated: 32 },
    ]);
    expect(a.total.cns - advanceAccount(idleBefore, 70_000).total.cns).to.be.closeTo(
      (112 - 32) * 2 - 22,
      1e-6,
    );
    // The target falling back below the status is a rise cancelled, not
    // delivered: the lag stays 2 s.
    expect(a.lagMs).to.equal(2_000);
  });

  it("a reversal seen at the very moment CNS v2's write is due: the write is still fulfilled with what it wrote, then released", () => {
    let a = fold([
      { at: 0, demand: 10, target: 32, allocated: 16 },
      { at: 5_000, demand: 10, target: 32, allocated: 32 }, // lag 5 s
      { at: 100_000, demand: 40, target: 48, allocated: 32 }, // written, due at 105 s ...
      { at: 105_000, demand: 10, target: 32, allocated: 32 }, // ... and reversed at 105 s
    ]);
    expect(a.cnsStatus).to.equal(48);
    a = advanceAccount(a, 120_000);
    expect(a.cnsStatus).to.equal(32);
    expect(a.cnsChurn).to.equal(16 + 16 + 16);
  });

  it("before a lag is measured, CNS v2's churn is the pool's own (a spike it cannot tell from a delivery counts nothing)", () => {
    // The pool starts at 16, the target jumps to 96 and falls back to 80 within
    // the (still unknown) lag: the status went 16 -> 80 and so would CNS v2's.
    const a = advanceAccount(
      fold([
        { at: 0, demand: 84, target: 96, allocated: 16 },
        { at: 3_000, demand: 61, target: 80, allocated: 16 },
        { at: 5_000, demand: 61, target: 80, allocated: 80 },
      ]),
      60_000,
    );
    expect(a.heldChurn).to.equal(64);
    expect(a.cnsChurn).to.equal(64);
  });

  it("CNS v2's control plane works one round at a time: a rise reversed while a round is under way is never fulfilled", () => {
    // The lag is 2 s; CNS v2 releases 32 -> 16 at 100 s (a round to 102 s); the
    // target jumps to 64 at 100.5 s and falls back to 16 at 101 s: the rise
    // waited for the round under way, and the next round reads 16 (nothing to do).
    let a = fold([
      { at: 0, demand: 10, target: 32, allocated: 16 },
      { at: 2_000, demand: 10, target: 32, allocated: 32 },
      { at: 100_000, demand: 5, target: 16, allocated: 32 },
      { at: 100_600, demand: 50, target: 64, allocated: 32 },
      { at: 101_200, demand: 5, target: 16, allocated: 32 },
    ]);
    a = advanceAccount(a, 110_000);
    expect(a.cnsStatus).to.equal(16);
    // Churn: 16 up (the first rise), 16 down; never the 48 of the reversed rise.
    expect(a.cnsChurn).to.equal(16 + 16);
    expect(a.cnsRound).to.equal(undefined);
  });

  it("CNS v2's rise waits for its release's round under way", () => {
    const a = fold([
      { at: 0, demand: 10, target: 32, allocated: 16 },
      { at: 2_000, demand: 10, target: 32, allocated: 32 },
      { at: 100_000, demand: 5, target: 16, allocated: 32 }, // release round to 102 s
      { at: 101_000, demand: 40, target: 48, allocated: 32 }, // waits: 102 s to 104 s
    ]);
    // Side by side it would land 2 s after its write, at 103 s.
    expect(advanceAccount(a, 103_500).cnsStatus).to.equal(16);
    expect(advanceAccount(a, 104_000).cnsStatus).to.equal(48);
  });

  it("follows the pool's own rounds from its spec: a round's time runs from when it began, after the round before", () => {
    // The pool releases 48 -> 32 at 10 s (a round begins), asks for 64 at 12 s
    // (it waits), the release lands at 30 s (20 s) and the rise, begun then, at 70 s.
    const a = fold([
      { at: 0, demand: 20, target: 48, allocated: 48, requested: 48, releasing: 0 },
      { at: 10_000, demand: 10, target: 32, allocated: 48, requested: 32, releasing: 16 },
      { at: 12_000, demand: 50, target: 64, allocated: 48, requested: 64, releasing: 16 },
    ]);
    expect(a.round).to.deep.include({ began: 10_000, reads: 32, releases: true });
    const released = observeAccount(a, {
      at: 30_000,
      demand: 50,
      target: 64,
      allocated: 32,
      requested: 64,
      releasing: 0,
    });
    expect(released.lagMs).to.equal(20_000);
    expect(released.round).to.deep.equal({ began: 30_000, reads: 64 });
    const risen = observeAccount(released, {
      at: 70_000,
      demand: 50,
      target: 64,
      allocated: 64,
      requested: 64,
      releasing: 0,
    });
    expect(risen.lagMs).to.equal(40_000);
    expect(risen.round).to.equal(undefined);
  });

  // The pool asks for 48 at 0 s (a round begins), for 80 at 33 s (it waits);
  // the first round lands at 40 s.
  const firstRoundOf40s: Observation[] = [
    { at: 0, demand: 22, target: 48, allocated: 16, requested: 48, releasing: 0 },
    { at: 33_000, demand: 61, target: 80, allocated: 16, requested: 80, releasing: 0 },
    { at: 40_000, demand: 61, target: 80, allocated: 48, requested: 80, releasing: 0 },
  ];

  it('a first round of a minute (an Azure NIC operation) is measured from when it began, not given up at 30 s', () => {
    const a = fold(firstRoundOf40s);
    expect(a.lagMs).to.equal(40_000);
  });

  it('at the first round measured, CNS v2 stands where the pool stands: its status, its round under way', () => {
    // Before 40 s CNS v2's writes showed at once (80 IPs); the control plane
    // was in fact working the pool's round, and begins the next (to 80) at 40 s.
    const a = fold(firstRoundOf40s);
    expect(a.cnsStatus).to.equal(48);
    expect(a.cnsRound).to.deep.equal({ began: 40_000, end: 80_000, request: 80, releases: 0 });
    // A status above CNS v2's request then is released by a write of its own.
    const above = fold([
      { at: 0, demand: 99, target: 112, allocated: 16, requested: 112, releasing: 0 },
      { at: 12_000, demand: 66, target: 80, allocated: 16, requested: 80, releasing: 0 },
      { at: 60_000, demand: 66, target: 80, allocated: 112, requested: 80, releasing: 0 },
    ]);
    expect(above.cnsStatus).to.equal(112);
    expect(above.cnsMarked).to.equal(32);
    expect(above.cnsRound).to.deep.equal({
      began: 60_000,
      end: 120_000,
      request: 80,
      releases: 32,
    });
  });

  it('a release round that adds as many IPs as it releases ends when its marked IPs leave the status', () => {
    // Rounds of 40 s. A release round begins at 100 s; at 140 s its marked
    // IPs have left the status and as many were added with them (a rise
    // read in the same round): the count stays 48.
    const a = fold([
      { at: 0, demand: 20, target: 48, allocated: 16, requested: 48, releasing: 0 },
      { at: 40_000, demand: 20, target: 48, allocated: 48, requested: 48, releasing: 0 },
      { at: 100_000, demand: 10, target: 32, allocated: 48, requested: 32, releasing: 16 },
      { at: 105_000, demand: 30, target: 48, allocated: 48, requested: 48, releasing: 16 },
      { at: 140_000, demand: 30, target: 48, allocated: 48, requested: 48, releasing: 0 },
    ]);
    expect(a.lagMs).to.equal(40_000);
    expect(a.round).to.equal(undefined);
  });

  it('matches the exact integral of what the pool held, since start and over the window (property)', () => {
    const step = fc.record({
      dt: fc.integer({ min: 1, max: 20 * 60_000 }),
      demand: fc.integer({ min: 0, max: 120 }),
      target: fc.integer({ min: 0, max: 8 }).map((b) => b * 16),
      allocated: fc.option(fc.integer({ min: 0, max: 160 }), { nil: undefined, freq: 5 }),
    });
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 60 }),
        fc.nat(3_600_000),
        (steps, tail) => {
          let at = 0;
          const obs: Observation[] = steps.map((s) => {
            at += s.dt;
            return {
              at,
              demand: s.demand,
              target: s.target,
              ...(s.allocated !== undefined ? { allocated: s.allocated } : {}),
            };
          });
          const end = at + tail;
          const a = advanceAccount(fold(obs), end);
          expect(close(a.total.held, heldIdle(obs, 0, end)), 'since start').to.equal(true);
          // The window: the buckets from (BUCKETS - 1) before the current one on.
          const from = (Math.floor(end / BUCKET_MS) - (BUCKETS - 1)) * BUCKET_MS;
          expect(close(windowTotals(a).held, heldIdle(obs, from, end)), 'window').to.equal(true);
          // The memory stays bounded however long the run.
          expect(a.buckets.length).to.be.at.most(BUCKETS);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("the window's budget does not count the credit of the bucket that leaves it next", () => {
    // Two days at 10 idle for CNS v2 and the pool alike, then the pool holds 40 idle.
    const day = 24 * 3_600_000;
    let a = fold([{ at: 0, demand: 6, target: 16, allocated: 16 }]);
    a = advanceAccount(a, 2 * day);
    // Earned (2 - 1) x 10 IP-s per second: 1,728,000 since start; the window holds
    // 23 full hourly buckets of 36,000 each, the oldest of which is not counted.
    expect(budgetLeft(a, 2)).to.be.closeTo(22 * 36_000, 1e-6);
    a = observeAccount(a, { at: 2 * day, demand: 6, target: 16, allocated: 46 });
    a = advanceAccount(a, 2 * day + 100_000);
    // Spent 40 - 2 x 10 = 20 IP-s per second for 100 s.
    expect(budgetLeft(a, 2)).to.be.closeTo(22 * 36_000 - 2_000, 1e-6);
  });
});
