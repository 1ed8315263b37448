import { expect } from 'chai';
import fc from 'fast-check';
import {
  AUTO_DEFAULTS,
  autoPolicy,
  decideAuto,
  fallLikely,
  riseLikely,
  ROUND_MARGIN_MS,
  waitRisk,
} from '../../src/scaling/policies/auto/auto.ts';
import { keepAlive, reuseWithin } from '../../src/scaling/policies/auto/keep-alive.ts';
import {
  emptyLevels,
  GAPS_PER_LEVEL,
  MAX_LEVELS,
  observeLevels,
  type LevelsMemory,
} from '../../src/scaling/policies/auto/levels.ts';
import { guarded, type Observation, type PolicyView } from '../../src/scaling/policies/policy.ts';
import { calculateTarget } from '../../src/scaling/target.ts';

const scaler = { batch: 16, buffer: 0.5, max: 250 };
const auto = guarded(autoPolicy());

function fold(observations: readonly Observation[]): LevelsMemory {
  return observations.reduce(observeLevels, emptyLevels());
}

/** Observations of demand alternating a <-> b every `periodMs`, n times. */
function alternating(a: number, b: number, periodMs: number, n: number): Observation[] {
  return Array.from({ length: n }, (_, i) => {
    const demand = i % 2 === 0 ? a : b;
    return { at: i * periodMs, demand, target: calculateTarget(demand, scaler) };
  });
}

function view(m: LevelsMemory, request: number, now: number): PolicyView {
  const target = m.target ?? 0;
  return { now, demand: 0, target, request, scaler, exhausted: false };
}

describe('scaling/policies/auto', () => {
  describe('keepAlive (ski rental on the recorded gaps)', () => {
    it('keeps a level whose gaps were short, lets it go once the gap outlasts them', () => {
      const gaps = Array.from({ length: 10 }, () => 10_000);
      expect(keepAlive(gaps, 0, 16, 1000)).to.deep.include({ keep: true, recheckAge: 10_000 });
      expect(keepAlive(gaps, 10_001, 16, 1000).keep).to.equal(false);
    });

    it('lets go at once when the gaps were longer than a release cycle is worth', () => {
      // 16 IPs idle for 100 s = 1600 IP-s > a cycle of 1000 IP-s.
      expect(keepAlive([100_000, 100_000, 100_000], 0, 16, 1000).keep).to.equal(false);
    });

    it('no record, no keep; unseen pseudo-gaps and slack move the choice as documented', () => {
      expect(keepAlive([], 0, 16, 1000).keep).to.equal(false);
      // One 50 s gap: 800 IP-s < 1000: keep; with 3 unseen longer gaps the risk outweighs it.
      expect(keepAlive([50_000], 0, 16, 1000).keep).to.equal(true);
      expect(keepAlive([50_000], 0, 16, 1000, 3).keep).to.equal(false);
      // A gap of 10 s stands for up to 11 s with slack 0.1.
      expect(keepAlive([10_000], 10_500, 16, 1000, 0, 0.1).keep).to.equal(true);
      expect(keepAlive([10_000], 10_500, 16, 1000, 0, 0).keep).to.equal(false);
    });

    it('reuseWithin: the share of possible gaps ending within the horizon', () => {
      expect(reuseWithin([5_000, 20_000, 60_000], 10_000, 15_000)).to.equal(0.5);
      expect(reuseWithin([5_000], 10_000, 15_000)).to.equal(0);
    });
  });

  describe('levels', () => {
    it('records how long each level stayed unused and how long it stayed needed', () => {
      const m = fold(alternating(24, 25, 10_000, 5)); // 32, 48, 32, 48, 32
      const l48 = m.levels.get(48)!;
      expect(l48.gaps).to.deep.equal([10_000]);
      expect(l48.busy).to.deep.equal([10_000, 10_000]);
      expect(l48.since).to.equal(40_000);
      expect(m.levels.get(32)!.since).to.equal(undefined);
    });

    it('memory stays bounded however long it runs', () => {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.nat(5_000), fc.nat(250)), { minLength: 1, maxLength: 600 }),
          (steps) => {
            let at = 0;
            const m = fold(steps.map(([dt, target]) => ({ at: (at += dt), demand: 0, target })));
            expect(m.levels.size).to.be.at.most(MAX_LEVELS);
            for (const l of m.levels.values()) {
              expect(l.gaps.length).to.be.at.most(GAPS_PER_LEVEL);
              expect(l.busy.length).to.be.at.most(GAPS_PER_LEVEL);
            }
          },
        ),
        { numRuns: 100 },
      );
    });
  });

  describe('decisions', () => {
    it('a level that keeps coming back (24 <-> 25 pods) is kept, with the reason', () => {
      const m = fold(alternating(24, 25, 10_000, 21)); // ends at 24 pods: target 32
      const d = auto.decide(m, view(m, 48, 200_500));
      expect(d).to.deep.include({ applied: 48, deferred: true });
      expect(d.why?.summary).to.match(/keeping 48 for the target 32/);
      expect(d.recheckAt).to.be.greaterThan(200_500);
    });

    it('a first dip is not held back: nothing in the record argues for it', () => {
      const m = fold([
        { at: 0, demand: 40, target: 64 },
        { at: 60_000, demand: 5, target: 16 },
      ]);
      // 48 IPs idle since 60 s for 10 s: 480 IP-s < two writes (600): it waits only while the
      // level at the target is likely to go too; 16 has no record, so it goes now.
      expect(auto.decide(m, view(m, 64, 70_000))).to.deep.include({ applied: 16, deferred: false });
    });

    it('a scale-up reaches the levels that came back soon after gaps like this one', () => {
      // Waves: 16 -> 48 -> (5 s later) 80 -> 48 -> 16 every 120 s.
      const obs: Observation[] = [];
      for (let w = 0; w < 10; w += 1) {
        const t = w * 120_000;
        obs.push(
          { at: t, demand: 0, target: 16 },
          { at: t + 20_000, demand: 30, target: 48 },
          { at: t + 25_000, demand: 60, target: 80 },
          { at: t + 60_000, demand: 30, target: 48 },
          { at: t + 70_000, demand: 0, target: 16 },
        );
      }
      obs.push({ at: 1_220_000, demand: 30, target: 48 });
      const m = fold(obs);
      const d = auto.decide(m, { ...view(m, 16, 1_220_000), demand: 30 });
      expect(d.applied).to.equal(80);
      expect(d.why?.summary).to.match(/reaching 80/);
    });

    const history = fc
      .array(fc.tuple(fc.integer({ min: 1, max: 120_000 }), fc.nat(120)), {
        minLength: 1,
        maxLength: 80,
      })
      .map((steps) => {
        let at = 0;
        return steps.map(([dt, demand]) => ({
          at: (at += dt),
          demand,
          target: calculateTarget(demand, scaler),
        }));
      });

    it('never delays a scale-up, never goes below the CNS v2 target (demand + buffer), never above max', () => {
      fc.assert(
        fc.property(history, fc.nat(250), fc.nat(600_000), (obs, request, later) => {
          const m = fold(obs);
          const last = obs.at(-1)!;
          const v = { ...view(m, request, last.at + later), demand: last.demand };
          const d = auto.decide(m, v);
          expect(d.applied).to.be.at.least(v.target);
          expect(d.applied).to.be.at.least(Math.min(scaler.max, last.demand + 8));
          expect(d.applied).to.be.at.most(Math.max(scaler.max, v.target));
          if (v.target > request) expect(d.deferred).to.equal(false);
          if (v.target <= request) expect(d.applied).to.be.at.most(request);
          if (d.recheckAt !== undefined) expect(d.recheckAt).to.be.greaterThan(v.now);
        }),
        { numRuns: 300 },
      );
    });

    it('a reach is kept by the next look at the same moment (else two writes where CNS v2 makes one)', () => {
      fc.assert(
        fc.property(history, fc.nat(250), fc.nat(600_000), (obs, request, later) => {
          const m = fold(obs);
          const last = obs.at(-1)!;
          const v = { ...view(m, request, last.at + later), demand: last.demand };
          if (!(v.target > request)) return;
          const reached = auto.decide(m, v).applied;
          expect(auto.decide(m, { ...v, request: reached }).applied).to.equal(reached);
        }),
        { numRuns: 1000 },
      );
    });

    it('is deterministic: the same history and time give the same decision', () => {
      fc.assert(
        fc.property(history, fc.nat(250), fc.nat(600_000), (obs, request, later) => {
          const now = obs.at(-1)!.at + later;
          const a = auto.decide(fold(obs), view(fold(obs), request, now));
          const b = guarded(autoPolicy()).decide(fold([...obs]), view(fold(obs), request, now));
          expect(a).to.deep.equal(b);
        }),
        { numRuns: 100 },
      );
    });
  });

  it('documents its cost model', () => {
    expect(AUTO_DEFAULTS.writeCost).to.be.greaterThan(0);
    expect(auto.staleClearMs).to.equal(AUTO_DEFAULTS.staleClearMs);
  });

  describe('on a control plane that works a node one round at a time (docs/decisions/0034)', () => {
    // Demand 40 (target 48) and 4 (target 16) in turn, 100 s each: level 48's
    // gaps are 100 s, and it stays needed 100 s at a time. The target fell
    // to 16 at 500 s.
    const m = fold(alternating(40, 4, 100_000, 6));
    const slack = AUTO_DEFAULTS.gapSlack;
    const horizon = 40_000 * AUTO_DEFAULTS.roundsAtRisk + ROUND_MARGIN_MS;

    it('riseLikely: when demand is next likely back above a level, from the gaps of the levels above it', () => {
      // Gaps of 100 s: back within 90 to 110 s of the fall at 500 s.
      expect(riseLikely(m, 16, 520_000, AUTO_DEFAULTS)).to.deep.equal({
        from: 500_000 + 100_000 * (1 - slack),
        until: 500_000 + 100_000 * (1 + slack),
      });
      // A tail of a round after it: a gap a little longer than any seen.
      expect(riseLikely(m, 16, 520_000, AUTO_DEFAULTS, 5_000)?.until).to.equal(615_000);
      // Over by then, or nothing above: nothing likely.
      expect(riseLikely(m, 16, 620_000, AUTO_DEFAULTS)).to.equal(undefined);
      expect(riseLikely(m, 48, 520_000, AUTO_DEFAULTS)).to.equal(undefined);
    });

    it('fallLikely: when the target is next likely to fall below a level, from how long it stays needed', () => {
      const up = fold(alternating(40, 4, 100_000, 5)); // needed again from 400 s
      expect(fallLikely(up, 48, 420_000, AUTO_DEFAULTS)).to.deep.equal({
        from: 400_000 + 100_000 * (1 - slack),
        until: 400_000 + 100_000 * (1 + slack),
      });
    });

    it('waitRisk: a late release is at risk while a rise is likely within a round of it; a release when the target falls never is', () => {
      // Rounds of 40 s: the horizon is 40 x 1.1 s and the margin (45 s).
      expect(waitRisk(m, 16, 500_000, 40_000, AUTO_DEFAULTS)).to.equal(undefined);
      expect(waitRisk(m, 16, 560_000, 40_000, AUTO_DEFAULTS)).to.deep.equal({
        from: 590_000,
        until: 610_000 + horizon,
      });
      // Long before the likely rise, or with the round's time unknown: no risk.
      expect(waitRisk(m, 16, 501_000, 40_000, AUTO_DEFAULTS)).to.equal(undefined);
      expect(waitRisk(m, 16, 560_000, undefined, AUTO_DEFAULTS)).to.equal(undefined);
    });

    it('keeps the request rather than start a release a likely rise would find under way', () => {
      const v: PolicyView = { ...view(m, 48, 560_000), roundMs: 40_000 };
      const d = decideAuto(m, v, AUTO_DEFAULTS);
      expect(d).to.deep.include({ applied: 48, deferred: true, recheckAt: 610_000 + horizon });
      expect(d.why?.summary).to.match(/a release under way would hold that rise back/);
      expect(d.riseLikely).to.deep.equal({ from: 590_000, until: 610_000 + horizon });
      // With the round's time not known: the record alone decides, as before.
      expect(decideAuto(m, view(m, 48, 560_000), AUTO_DEFAULTS).riseLikely).to.equal(undefined);
    });
  });
});
