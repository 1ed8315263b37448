import { expect } from 'chai';
import fc from 'fast-check';
import { autoPolicy } from '../../src/scaling/policies/auto/auto.ts';
import { parseCarried } from '../../src/scaling/policies/budget/carried.ts';
import { withIdleBudget } from '../../src/scaling/policies/budget/idle-budget.ts';
import {
  advanceShadows,
  chooseDelay,
  emptyShadows,
  observeShadows,
  shadowRequest,
  type Shadows,
} from '../../src/scaling/policies/budget/shadows.ts';
import type { Observation, PolicyView } from '../../src/scaling/policies/policy.ts';
import { calculateTarget } from '../../src/scaling/target.ts';

const scaler = { batch: 16, buffer: 0.5, max: 250 };

function fed(observations: Observation[], until: number, budget = 1.5): Shadows {
  let s = emptyShadows([0, 30]);
  for (const o of observations) s = observeShadows(s, o, budget);
  return advanceShadows(s, until);
}

const live = (at: number, demand: number, target: number): Observation => ({
  at,
  demand,
  target,
  allocated: target,
});

describe('scaling/policies/budget/shadows', () => {
  it('integrates what a fixed delay would hold: idle, its release writes and churn', () => {
    // 48 for 40 pods, then 16 for 8 at 10 s; delay 30 s holds 48 until 40 s.
    const s = fed([live(0, 40, 48), live(10_000, 8, 16)], 60_000);
    const [cns, d30] = s.delays;
    expect(cns).to.include({ seconds: 0, idle: 8 * 10 + 8 * 50, writes: 2, churn: 32 });
    expect(d30).to.include({ seconds: 30, idle: 8 * 10 + 40 * 30 + 8 * 20, writes: 2, churn: 32 });
    const at39 = fed([live(0, 40, 48), live(10_000, 8, 16)], 39_000);
    expect(shadowRequest(at39.runs, 39_000, 30_000)).to.equal(48);
    expect(shadowRequest(at39.runs, 40_000, 30_000)).to.equal(16);
  });

  it('a rise within the delay is no write for it; replayed history is not counted', () => {
    const s = fed(
      [
        { at: 0, demand: 40, target: 48 },
        { at: 5_000, demand: 8, target: 16 },
        live(10_000, 8, 16),
        live(20_000, 40, 48),
      ],
      30_000,
    );
    const [cns, d30] = s.delays;
    expect(cns?.writes).to.equal(1);
    expect(d30?.writes).to.equal(0);
    expect(cns?.idle).to.equal(8 * 10 + 8 * 10);
    expect(d30?.idle).to.equal(40 * 10 + 8 * 10);
  });

  it('follows the longest delay that fits the budget, a longer one only with a margin to spare', () => {
    const s = fed([live(0, 40, 48), live(10_000, 8, 16)], 60_000);
    // delay 30 s held 1,440 IP-s against CNS v2's 480: 3 x.
    expect(chooseDelay(s, 2, 0)).to.equal(0);
    expect(chooseDelay(s, 3, 0)).to.equal(0); // fits, but not with 5 % to spare
    expect(chooseDelay(s, 3, 30)).to.equal(30); // kept while it fits
    expect(chooseDelay(s, 3.2, 0)).to.equal(30);
  });

  it('the shadow state stays bounded: at most one run per target value', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 300 }), (demands) => {
        let s = emptyShadows();
        demands.forEach((d, i) => {
          s = observeShadows(s, live(i * 7_000, d, calculateTarget(d, scaler)), 1.5);
        });
        const targets = s.runs.map((r) => r.target);
        expect(new Set(targets).size).to.equal(targets.length);
        expect(targets).to.deep.equal([...targets].sort((a, b) => b - a));
        for (const d of s.delays) expect(d.buckets.length).to.be.at.most(24);
      }),
      { numRuns: 50 },
    );
  });
});

describe('scaling/policies/budget: the account carried across a restart', () => {
  const view = (now: number, demand: number, request: number): PolicyView => ({
    now,
    demand,
    target: calculateTarget(demand, scaler),
    request,
    scaler,
    exhausted: false,
    allocated: request,
  });

  it('resumes the budget earned: a hold goes through at once after a restart', () => {
    const before = withIdleBudget(autoPolicy(), 1.5);
    let m = before.initial();
    // Two hours of 40 pods for 100 s and 8 for 30 s, the pool as CNS v2: the
    // budget is earned, and a 10 s delay fits it (1.31 x CNS v2's idle).
    let t = 0;
    for (let i = 0; i < 110; i += 1) {
      const demand = i % 2 === 0 ? 40 : 8;
      const target = calculateTarget(demand, scaler);
      m = before.observe(m, { at: t, demand, target, allocated: target });
      t += i % 2 === 0 ? 100_000 : 30_000;
    }
    expect(before.account(m, t).following).to.equal(10);
    const saved = before.account(m, t);
    const carried = parseCarried(JSON.parse(JSON.stringify(saved.carry)));
    expect(carried).to.not.equal(undefined);
    const after = withIdleBudget(autoPolicy(), 1.5, { carried: carried! });
    const fresh = withIdleBudget(autoPolicy(), 1.5);
    const resumedView = after.account(after.initial(), t + 60_000);
    expect(resumedView.cnsV2IdleIpSeconds).to.equal(saved.cnsV2IdleIpSeconds);
    expect(resumedView.heldIdleIpSeconds).to.equal(saved.heldIdleIpSeconds);
    expect(resumedView.cnsV2Writes).to.equal(saved.cnsV2Writes);
    expect(resumedView.resumed).to.deep.equal({ from: carried!.savedAt, times: 1 });
    expect(resumedView.budgetLeftIpSeconds).to.equal(saved.budgetLeftIpSeconds);
    // The first live observation after the restart: demand fell; the resumed
    // policy holds (its budget and the delay it followed survived), a fresh one cannot.
    const o = { at: t + 60_000, demand: 40, target: 48, allocated: 48 };
    const fall = view(t + 70_000, 8, 48);
    const decide = (p: typeof after) => {
      let mem = p.observe(p.initial(), o);
      mem = p.observe(mem, { at: t + 70_000, demand: 8, target: 16, allocated: 48 });
      return p.decide(mem, fall).applied;
    };
    expect(decide(fresh)).to.equal(16);
    expect(decide(after)).to.equal(48);
  });

  it('reads back only what reads as an account: anything else is ignored, never thrown', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(() => parseCarried(v)).to.not.throw();
      }),
      { numRuns: 300 },
    );
    expect(parseCarried({ version: 1 })).to.equal(undefined);
    expect(parseCarried(null)).to.equal(undefined);
  });
});
