import { expect } from 'chai';
import fc from 'fast-check';
import {
  burstReach,
  LOWS_KEPT_MS,
  observeLows,
  climbWithin,
  type DemandLows,
} from '../../src/scaling/policies/budget/burst-reach.ts';
import { emptyAccount, type IdleAccount } from '../../src/scaling/policies/budget/idle-account.ts';
import type { PolicyDecision, PolicyView } from '../../src/scaling/policies/policy.ts';

const scaler = { batch: 16, buffer: 0.5, max: 250 };
const ROUND_MS = 60_000;

/** Demand observed at these (ms, pods), in order. */
function lowsOf(points: readonly [number, number][]): DemandLows {
  return points.reduce<DemandLows>((l, [at, demand]) => observeLows(l, at, demand), []);
}

/** A rise from `request` to `target` written at `now` with `demand` pods. */
function rise(now: number, demand: number, target: number, request: number): PolicyView {
  return { now, demand, target, request, scaler, exhausted: false, roundMs: ROUND_MS };
}

const follow = (v: PolicyView): PolicyDecision => ({ applied: v.target, deferred: false });

describe('burst reach: a rise in a burst reaches a batch further on a slow control plane', () => {
  it('the climb over a window: demand now against the lowest since, since when, its largest step between lows (property)', () => {
    const points = fc
      .array(fc.record({ step: fc.integer({ min: 1, max: 20_000 }), demand: fc.nat(200) }), {
        minLength: 1,
        maxLength: 60,
      })
      .map((xs) => {
        let at = 0;
        return xs.map(({ step, demand }) => [(at += step), demand] as [number, number]);
      });
    fc.assert(
      fc.property(points, fc.integer({ min: 1, max: LOWS_KEPT_MS }), (obs, ms) => {
        const [now, demand] = obs[obs.length - 1]!;
        const window = obs.filter(([at]) => at >= now - ms);
        const since = window.map(([, d]) => d);
        // The lows: each demand lower than every one after it.
        const lows = since.filter((d, i) => since.slice(i + 1).every((later) => d < later));
        const steps = lows.slice(1).map((d, i) => d - lows[i]!);
        const lowest = Math.min(...since);
        const lastAtLowest = window.filter(([, d]) => d === lowest).pop()![0];
        expect(climbWithin(lowsOf(obs), now, demand, ms)).to.deep.equal({
          risen: Math.max(0, demand - lowest),
          overMs: now - lastAtLowest,
          largestStep: Math.max(0, ...steps),
        });
      }),
    );
  });

  it('keeps only lows: each lower than every one after it, none older than LOWS_KEPT_MS', () => {
    const lows = lowsOf([
      [0, 50],
      [1_000, 10],
      [2_000, 30],
      [3_000, 20],
      [4_000, 40],
    ]);
    expect(lows).to.deep.equal([
      { at: 1_000, demand: 10 },
      { at: 3_000, demand: 20 },
      { at: 4_000, demand: 40 },
    ]);
    expect(observeLows(lows, 1_001 + LOWS_KEPT_MS, 45)).to.deep.equal([
      { at: 3_000, demand: 20 },
      { at: 4_000, demand: 40 },
      { at: 1_001 + LOWS_KEPT_MS, demand: 45 },
    ]);
  });

  // bursts-1 at 2 h 48 min (docs/results/auto-budget.md): demand 57 -> 73
  // in two seconds; the round begun on the rise to 96 read 96, demand
  // reached 104 within the round, and 24 pods waited for the next.
  const burst = lowsOf(
    Array.from({ length: 17 }, (_, i) => [10_089_400 + i * 130, 57 + i] as [number, number]),
  );

  it('reaches one batch above the target when demand rose a batch within a quarter round and no round is under way', () => {
    const v = rise(10_091_500, 73, 96, 80);
    const d = burstReach(follow(v), v, emptyAccount(), burst);
    expect(d.applied).to.equal(112);
    expect(d.deferred).to.equal(false);
    expect(d.why?.summary).to.match(/demand rose 16 pods in 2 s/);
  });

  it('leaves the decision alone when a round is under way: it reads the request when it ends', () => {
    const v = rise(10_091_500, 73, 96, 80);
    const busy: IdleAccount = { ...emptyAccount(), round: { began: 10_060_000, reads: 80 } };
    expect(burstReach(follow(v), v, busy, burst).applied).to.equal(96);
  });

  it('leaves a step alone: a batch that came at once is all read by the round', () => {
    // Generated seed 1248: 27 -> 61 at once; a reach to 96 was released
    // unused, and that release's round held the next rise back 100 s.
    const step = lowsOf([
      [1_003_000, 27],
      [1_007_000, 61],
    ]);
    const v = rise(1_007_000, 61, 80, 48);
    expect(burstReach(follow(v), v, emptyAccount(), step).applied).to.equal(80);
  });

  it('reaches on half a batch come pod by pod in a second or two (bursts-3), not on one step of it', () => {
    // bursts-3 at 4 h 56 min: 26 -> 41 within about 1.5 s.
    const fast = lowsOf(
      Array.from({ length: 16 }, (_, i) => [17_784_000 + i * 100, 26 + i] as [number, number]),
    );
    const v = rise(17_785_400, 41, 64, 48);
    expect(burstReach(follow(v), v, emptyAccount(), fast).applied).to.equal(80);
    const step = lowsOf([
      [17_780_000, 31],
      [17_785_400, 41],
    ]);
    expect(burstReach(follow(v), v, emptyAccount(), step).applied).to.equal(64);
  });

  it('leaves a slower rise alone (a batch over more than a quarter round)', () => {
    const slow = lowsOf(
      Array.from({ length: 17 }, (_, i) => [10_060_000 + i * 1_970, 57 + i] as [number, number]),
    );
    const v = rise(10_091_500, 73, 96, 80);
    expect(burstReach(follow(v), v, emptyAccount(), slow).applied).to.equal(96);
  });

  it('leaves a fall, a fast control plane, and a decision already above alone; never above max', () => {
    const account = emptyAccount();
    const fall = rise(10_091_500, 73, 96, 112);
    expect(burstReach(follow(fall), fall, account, burst).applied).to.equal(96);
    const fast = { ...rise(10_091_500, 73, 96, 80), roundMs: undefined };
    expect(burstReach(follow(fast), fast, account, burst).applied).to.equal(96);
    const v = rise(10_091_500, 73, 96, 80);
    expect(burstReach({ applied: 128, deferred: false }, v, account, burst).applied).to.equal(128);
    const top = rise(10_091_500, 73, 240, 224);
    expect(burstReach(follow(top), top, account, burst).applied).to.equal(250);
  });
});
