import { expect } from 'chai';
import fc from 'fast-check';
import { parseIdleBudget } from '../../src/scaling/idle-budget-value.ts';
import { autoPolicy } from '../../src/scaling/policies/auto/auto.ts';
import {
  advanceAccount,
  emptyAccount,
  observeAccount,
  type IdleAccount,
} from '../../src/scaling/policies/budget/idle-account.ts';
import {
  budgeted,
  churnSaved,
  deliveredRiseKept,
  heldBackAtMost,
  RELEASE_LAG_SECONDS,
  releaseLagSeconds,
  unreadRiseGivenUp,
  waitAllowance,
  waitGuarded,
  withIdleBudget,
} from '../../src/scaling/policies/budget/idle-budget.ts';
import {
  guarded,
  type Observation,
  type PolicyDecision,
  type PolicyView,
} from '../../src/scaling/policies/policy.ts';
import { releasePolicy } from '../../src/scaling/policies/release-delay.ts';
import { calculateTarget } from '../../src/scaling/target.ts';

const scaler = { batch: 16, buffer: 0.5, max: 250 };
const TWO_DAYS = 2 * 24 * 3600;

/** An account that has run `seconds` with CNS v2 and the pool both `idle` IPs idle. */
function earned(idle: number, seconds: number): IdleAccount {
  const a = observeAccount(emptyAccount(), {
    at: 0,
    demand: 8,
    target: 8 + idle,
    allocated: 8 + idle,
  });
  return advanceAccount(a, seconds * 1000);
}

function view(now: number, demand: number, request: number): PolicyView {
  return {
    now,
    demand,
    target: calculateTarget(demand, scaler),
    request,
    scaler,
    exhausted: false,
    allocated: request,
  };
}

const keep = (applied: number, recheckAt?: number): PolicyDecision => ({
  applied,
  deferred: true,
  ...(recheckAt !== undefined ? { recheckAt } : {}),
  why: { policy: 'auto', summary: `keeping ${applied}` },
});

describe('scaling/policies/budget/idle-budget', () => {
  it('--idle-budget takes a number >= 1 and names the flag otherwise', () => {
    expect(parseIdleBudget('1.5')).to.equal(1.5);
    expect(parseIdleBudget(' 1 ')).to.equal(1);
    for (const bad of ['0.9', '0', '-2', 'abc', '', 'Infinity', 'NaN', '1.5x']) {
      expect(() => parseIdleBudget(bad), bad).to.throw(/^--idle-budget must be a number >= 1/);
    }
  });

  it('lets the inner policy hold while the budget lasts, and looks again when it would run out', () => {
    // 2 days at 8 idle IPs each: with budget 1.5, 691,200 IP-s left since start; the
    // window's 23 full hourly buckets earned 14,400 each, the oldest not counted: 316,800.
    const a = earned(8, TWO_DAYS);
    const v = view(TWO_DAYS * 1000, 8, 48); // target 16: 8 idle for CNS v2
    const d = budgeted(keep(48), v, a, 1.5);
    expect(d.applied).to.equal(48);
    // Holding 48 spends 40 - 1.5 x 8 = 28 IP-s a second.
    expect(d.why).to.include({ budget: 1.5, spendPerSecond: 28 });
    const left = d.why?.budgetLeftIpSeconds as number;
    expect(left).to.equal(316_800);
    const runsOut = TWO_DAYS * 1000 + ((left - 28 * RELEASE_LAG_SECONDS) / 28) * 1000;
    expect(d.recheckAt).to.be.at.most(Math.ceil(runsOut));
    // The inner policy's own recheck wins when earlier.
    expect(budgeted(keep(48, TWO_DAYS * 1000 + 500), v, a, 1.5).recheckAt).to.equal(
      TWO_DAYS * 1000 + 500,
    );
  });

  it('follows the CNS v2 target once the budget is spent, and says so', () => {
    // 120 IP-s left at 1.5: not enough to hold 28 IP-s a second through a release's lag.
    const a = earned(8, 30);
    const d = budgeted(keep(48), view(60_000, 8, 48), a, 1.5);
    expect(d).to.deep.include({ applied: 16, deferred: false });
    expect(d.why?.summary).to.match(
      /idle budget \(1\.5 x CNS v2; 120 IP-s\) cannot pay for holding 48/,
    );
  });

  it("a hold the budget cannot carry to the inner policy's next look is let go at once, not half-way", () => {
    const a = earned(8, TWO_DAYS); // 316,800 IP-s left at 1.5 (the window binds)
    const now = TWO_DAYS * 1000;
    const v = view(now, 8, 48); // holding 48 spends 28 IP-s a second
    // Its next look in 11,000 s: 308,000 IP-s, affordable with the release's lag.
    expect(budgeted(keep(48, now + 11_000_000), v, a, 1.5).applied).to.equal(48);
    // In 11,400 s: 319,200 IP-s, more than is left: released now.
    expect(budgeted(keep(48, now + 11_400_000), v, a, 1.5)).to.deep.include({
      applied: 16,
      deferred: false,
    });
  });

  it("a followed delay's hold is not planned to its end: it holds while the budget lasts", () => {
    const a = earned(8, TWO_DAYS);
    const now = TWO_DAYS * 1000;
    const v = view(now, 8, 48);
    const followed: PolicyDecision = {
      ...keep(48, now + 11_400_000),
      why: { policy: 'auto', summary: 'holding 48 as a fixed 1200 s delay would', following: 1200 },
    };
    // The same hold as above, which the ski-rental's would not get: kept, and looked at again when the budget runs out.
    const d = budgeted(followed, v, a, 1.5);
    expect(d.applied).to.equal(48);
    expect(d.recheckAt).to.be.below(now + 11_400_000);
  });

  it('a hold that costs nothing beyond the budget, and any decision at the target, pass unchanged', () => {
    const none = emptyAccount();
    // Demand 8, target 16 (8 idle): holding 20 is 12 idle <= 2 x 8.
    const cheap = keep(20);
    expect(budgeted(cheap, view(0, 8, 20), none, 2)).to.equal(cheap);
    const atTarget: PolicyDecision = { applied: 16, deferred: false };
    expect(budgeted(atTarget, view(0, 8, 48), none, 1.5)).to.equal(atTarget);
  });

  it('a reach above a rising target must be affordable until demand can grow into it, and paid for in churn saved', () => {
    // 1,000 IPs of CNS v2 churn counted, none of the pool's: 900 saved, margin taken.
    const saved = (a: IdleAccount): IdleAccount => ({ ...a, cnsChurn: 1000 });
    const reach: PolicyDecision = { applied: 64, deferred: false };
    // Target 16 > request 0: reaching 64 spends 56 - 12 = 44 IP-s a second: 2,640 for 60 s.
    expect(budgeted(reach, view(600_000, 8, 0), saved(earned(8, 600)), 1.5).applied).to.equal(16);
    expect(budgeted(reach, view(3600_000, 8, 0), saved(earned(8, 3600)), 1.5).applied).to.equal(64);
    // With the idle to pay for it but no churn saved, releasing the 48 unused would churn more than CNS v2.
    expect(budgeted(reach, view(3600_000, 8, 0), earned(8, 3600), 1.5).applied).to.equal(16);
    expect(churnSaved({ ...earned(8, 60), cnsChurn: 200, heldChurn: 100 })).to.equal(80);
  });

  it('a rise the status has not delivered when the target falls is kept, as a hold: the control plane delivers what it was asked', () => {
    // The target fell to 16 while the status had 32 of the 64 asked for. The
    // control plane read the 64 when it started on it: giving it up now
    // would write 16, get the 64 anyway and release them (two writes more).
    const v: PolicyView = { ...view(3600_000, 8, 64), allocated: 32 };
    const hold = keep(64);
    // No churn saved, and the budget pays for the hold: kept.
    expect(budgeted(hold, v, earned(8, 3600), 1.5).applied).to.equal(64);
    // A budget that cannot pay for it lets go of it all, down to the target.
    expect(budgeted(hold, v, emptyAccount(), 1.5)).to.deep.include({
      applied: 16,
      deferred: false,
    });
  });

  it('`--release-delay auto` is auto within the budget, named auto, with an account', () => {
    const p = releasePolicy({ kind: 'auto' }, 1.2);
    expect(p.name).to.equal('auto');
    const m = p.observe(p.initial(), { at: 0, demand: 8, target: 16, allocated: 16 });
    expect(guarded(p).account?.(m, 10_000)).to.include({
      budget: 1.2,
      heldIdleIpSeconds: 80,
      cnsV2IdleIpSeconds: 80,
    });
    expect(releasePolicy({ kind: 'fixed', seconds: 30 }).account).to.equal(undefined);
  });

  /**
   * Demand (minutes to days of it) through auto at `budget`, the pool
   * following each decision at once. Idle IP-s per clock hour are counted
   * here, not by the account under test; `check` sees, after every span,
   * what the pool held against the target and the idle since start and over
   * the window (the current hour so far and the 23 whole hours before it).
   */
  function replay(
    demandSteps: readonly { seconds: number; demand: number }[],
    budget: number,
    check: (c: {
      t: number;
      held: number;
      target: number;
      holding: boolean;
      own: number;
      cns: number;
      windowOwn: number;
      windowCns: number;
    }) => void,
  ): void {
    const HOUR = 3_600_000;
    const policy = guarded(withIdleBudget(autoPolicy(), budget));
    let memory = policy.initial();
    let held = 16;
    let t = 0;
    let own = 0;
    let cns = 0;
    const ownHours = new Map<number, number>();
    const cnsHours = new Map<number, number>();
    const add = (m: Map<number, number>, from: number, to: number, rate: number): void => {
      for (let a = from; a < to;) {
        const h = Math.floor(a / HOUR);
        const b = Math.min(to, (h + 1) * HOUR);
        m.set(h, (m.get(h) ?? 0) + (rate * (b - a)) / 1000);
        a = b;
      }
    };
    const windowSum = (m: Map<number, number>, now: number): number => {
      let sum = 0;
      const last = Math.ceil(now / HOUR) - 1; // the hour `now` ends
      for (let h = last - 23; h <= last; h += 1) sum += m.get(h) ?? 0;
      return sum;
    };
    const observe = (demand: number): void => {
      memory = policy.observe(memory, {
        at: t,
        demand,
        target: calculateTarget(demand, scaler),
        allocated: held,
      });
    };
    for (const s of demandSteps) {
      const target = calculateTarget(s.demand, scaler);
      observe(s.demand);
      const end = t + s.seconds * 1000;
      while (t < end) {
        const d = policy.decide(memory, { ...view(t, s.demand, held), target });
        if (d.applied !== held) {
          held = d.applied;
          observe(s.demand);
        }
        const next = Math.min(end, d.recheckAt ?? end);
        const rates = [Math.max(0, held - s.demand), Math.max(0, target - s.demand)] as const;
        own += (rates[0] * (next - t)) / 1000;
        cns += (rates[1] * (next - t)) / 1000;
        add(ownHours, t, next, rates[0]);
        add(cnsHours, t, next, rates[1]);
        t = next;
        check({
          t,
          held,
          target,
          holding: held > target,
          own,
          cns,
          windowOwn: windowSum(ownHours, t),
          windowCns: windowSum(cnsHours, t),
        });
      }
    }
  }

  it('over days of any demand: since start always, and over the window while it holds above the target, within the budget (property)', () => {
    const steps = fc.array(
      fc.record({
        seconds: fc.integer({ min: 60, max: 4 * 3600 }),
        demand: fc.integer({ min: 0, max: 150 }),
      }),
      { minLength: 4, maxLength: 40 },
    );
    let heldMoreAfterADay = 0;
    fc.assert(
      fc.property(steps, fc.constantFrom(1.2, 1.5, 2), (input, budget) => {
        // Repeated so that auto learns its gaps and the shadows fit: up to 20 days.
        replay([...input, ...input, ...input], budget, (c) => {
          expect(c.own, `since start, at ${c.t} ms`).to.be.at.most(budget * c.cns + 1e-6);
          if (!c.holding) return;
          expect(c.windowOwn, `the window ending ${c.t} ms`).to.be.at.most(
            budget * c.windowCns + 1e-6,
          );
          if (c.t > 25 * 3_600_000 && c.windowOwn > c.windowCns * 1.01) heldMoreAfterADay += 1;
        });
      }),
      { numRuns: 60 },
    );
    // Not vacuous: after the first day auto held more than CNS v2 over many windows.
    expect(heldMoreAfterADay).to.be.at.least(30);
  });

  it('the window is checked when the budget is spent, not a bound on every later window (docs/decisions/0034)', () => {
    // A hold spends credit earned in hours that leave the window in the next
    // hours; as they leave, the window runs above 1.2 x CNS v2's while the pool
    // holds the target (found by the property above before its check was
    // narrowed, and again, on this demand, once the pace rule had changed the
    // first example's holds).
    const input = [
      { seconds: 9957, demand: 0 },
      { seconds: 61, demand: 0 },
      { seconds: 8532, demand: 0 },
      { seconds: 73, demand: 0 },
      { seconds: 72, demand: 57 },
      { seconds: 11306, demand: 24 },
    ];
    let worst = 0;
    replay([...input, ...input, ...input], 1.2, (c) => {
      expect(c.own).to.be.at.most(1.2 * c.cns + 1e-6);
      worst = Math.max(worst, c.windowOwn / c.windowCns);
    });
    expect(worst).to.be.above(1.2);
    expect(worst).to.be.below(1.21);
  });

  it('on any demand, a pool that follows it at once holds no more idle than the budget allows (property)', () => {
    const steps = fc.array(
      fc.record({
        seconds: fc.integer({ min: 1, max: 240 }),
        demand: fc.integer({ min: 0, max: 150 }),
      }),
      { minLength: 2, maxLength: 120 },
    );
    let heldMore = 0;
    fc.assert(
      fc.property(steps, fc.constantFrom(1, 1.1, 1.5, 2, 4), (input, budget) => {
        // Repeat the input so that auto learns its gaps and wants to hold.
        let own = 0;
        let cns = 0;
        replay([...input, ...input, ...input], budget, (c) => {
          expect(c.held).to.be.at.least(c.target);
          ({ own, cns } = c);
        });
        expect(own).to.be.at.most(budget * cns + 1e-6);
        if (own > cns * 1.01) heldMore += 1;
      }),
      { numRuns: 300 },
    );
    // Not vacuous: auto did hold more than CNS v2 in many runs.
    expect(heldMore).to.be.at.least(30);
  });

  describe('on a control plane that works a node one round at a time (docs/decisions/0034)', () => {
    /** The pool's own history, its spec and status seen: rounds of 40 s. */
    const rounds = (obs: readonly Observation[]): IdleAccount =>
      obs.reduce(observeAccount, emptyAccount());
    // A rise to 48 asked at 0 s, delivered at 40 s: the round's time is 40 s.
    const learned: Observation[] = [
      { at: 0, demand: 30, target: 48, allocated: 16, requested: 48, releasing: 0 },
      { at: 40_000, demand: 30, target: 48, allocated: 48, requested: 48, releasing: 0 },
    ];

    it("a rise waiting behind the round under way is given up when the target falls, as CNS v2's lower request gives it up", () => {
      // A release 48 -> 32 begins at 100 s; a rise to 64 is asked at 110 s and waits.
      const a = rounds([
        ...learned,
        { at: 100_000, demand: 20, target: 32, allocated: 48, requested: 32, releasing: 16 },
        { at: 110_000, demand: 50, target: 64, allocated: 48, requested: 64, releasing: 16 },
      ]);
      expect(a.round).to.include({ began: 100_000, reads: 32 });
      // The target falls back to 32 at 120 s: holding 64 would have the next round acquire it.
      const v: PolicyView = { ...view(120_000, 20, 64), allocated: 48 };
      const d = unreadRiseGivenUp(keep(64), v, a);
      expect(d.applied).to.equal(48);
      expect(d.why?.summary).to.match(/waits for the round under way, and is given up/);
      // Without a round under way (the account cannot tell) nothing changes.
      expect(unreadRiseGivenUp(keep(64), v, rounds(learned))).to.deep.equal(keep(64));
    });

    it('a rise a round has read is not written below: it comes whatever is written now', () => {
      // A rise to 96 begins at 100 s; the target falls to 48 at 110 s.
      const a = rounds([
        ...learned,
        { at: 100_000, demand: 80, target: 96, allocated: 48, requested: 96, releasing: 0 },
      ]);
      const v: PolicyView = { ...view(110_000, 30, 96), allocated: 48 };
      const followTarget: PolicyDecision = { applied: 48, deferred: false };
      const d = deliveredRiseKept(followTarget, v, a);
      expect(d).to.include({ applied: 96, deferred: true, recheckAt: 140_000 });
      // Once delivered it is an ordinary hold again.
      const delivered = rounds([
        ...learned,
        { at: 100_000, demand: 80, target: 96, allocated: 48, requested: 96, releasing: 0 },
        { at: 140_000, demand: 30, target: 48, allocated: 96, requested: 96, releasing: 0 },
      ]);
      expect(deliveredRiseKept(followTarget, { ...v, allocated: 96 }, delivered)).to.equal(
        followTarget,
      );
    });

    it('a rise read before the target fell is released when it lands, as CNS v2 releases it', () => {
      // A rise to 96 begins at 100 s; the target falls to 48 at 110 s; the
      // rise lands at 140 s. A release begun later would be a late one.
      const a = rounds([
        ...learned,
        { at: 100_000, demand: 80, target: 96, allocated: 48, requested: 96, releasing: 0 },
        { at: 110_000, demand: 30, target: 48, allocated: 48, requested: 96, releasing: 0 },
        { at: 140_000, demand: 30, target: 48, allocated: 96, requested: 96, releasing: 0 },
      ]);
      const v: PolicyView = { ...view(140_100, 30, 96), allocated: 96, roundMs: 40_000 };
      const d = waitGuarded(keep(96), v, a, 2);
      expect(d).to.include({ applied: 48, deferred: false });
      // A minute later the same hold is one under way: kept, not let go late.
      const later = advanceAccount(a, 200_000);
      expect(waitGuarded(keep(96), { ...v, now: 200_000 }, later, 2).applied).to.equal(96);
    });

    it("a hold is kept while CNS v2's control plane works a round begun before the fall, and begins with CNS v2's release", () => {
      // Both pools rise to 80 (50-90 s). The target falls to 64 at 100 s:
      // the pool holds, CNS v2 releases (its round 100-140 s). At 110 s the
      // target falls to 48: CNS v2's release of it begins only at 140 s.
      const risen: Observation[] = [
        ...learned,
        { at: 50_000, demand: 60, target: 80, allocated: 48, requested: 80, releasing: 0 },
        { at: 90_000, demand: 60, target: 80, allocated: 80, requested: 80, releasing: 0 },
      ];
      const a = rounds([
        ...risen,
        { at: 100_000, demand: 45, target: 64, allocated: 80, requested: 80, releasing: 0 },
        { at: 110_000, demand: 30, target: 48, allocated: 80, requested: 80, releasing: 0 },
      ]);
      expect(a.cnsRound).to.include({ began: 100_000, end: 140_000, releases: 16 });
      const v: PolicyView = { ...view(110_000, 30, 80), roundMs: 40_000 };
      // Few pods started, no record of a rise: a release now would be begun
      // as CNS v2's, were its control plane free. It is not: kept till then.
      expect(waitGuarded(keep(80), v, a, 1.5)).to.deep.include({ applied: 80, recheckAt: 140_001 });
      const then = advanceAccount(a, 140_001);
      expect(then.cnsRound).to.include({ began: 140_000, releases: 16 });
      const d = waitGuarded(keep(80), { ...v, now: 140_001 }, then, 1.5);
      expect(d).to.deep.include({ applied: 48, deferred: false });
      expect(d.why?.summary).to.match(/with no record of when demand comes back/);
      // Not while the pool's own round under way takes the IPs away (generated
      // seed 910): keeping the request would be a rise, then a release.
      const releasing = rounds([
        ...risen,
        { at: 100_000, demand: 45, target: 64, allocated: 80, requested: 64, releasing: 16 },
        { at: 110_000, demand: 30, target: 48, allocated: 80, requested: 80, releasing: 16 },
      ]);
      expect(releasing.round).to.include({ began: 100_000, reads: 64 });
      expect(waitGuarded(keep(80), v, releasing, 1.5).applied).to.equal(48);
    });

    it('a rise a round has read is kept only while the budget can pay for holding it', () => {
      // The rise to 96 begins at 50 s; the target falls to 48 at 55 s with
      // little budget earned: written lower, as CNS v2 writes it (the round
      // still delivers 96, and the next releases it).
      const policy = withIdleBudget(autoPolicy(), 1.2);
      const m = [
        ...learned,
        { at: 50_000, demand: 80, target: 96, allocated: 48, requested: 96, releasing: 0 },
      ].reduce(policy.observe, policy.initial());
      const v: PolicyView = { ...view(55_000, 30, 96), allocated: 48 };
      expect(m.account.round).to.include({ began: 50_000, reads: 96 });
      const d = policy.decide(m, v);
      expect(d.applied).to.equal(48);
      expect(d.why?.summary).to.match(/idle budget/);
    });

    it('a release decided now takes the write window, the rest of the round under way and a round of its own', () => {
      const a = rounds([
        ...learned,
        { at: 100_000, demand: 80, target: 96, allocated: 48, requested: 96, releasing: 0 },
      ]);
      // At 110 s: 30 s left of the round, then 40 s, and 0.5 s.
      expect(releaseLagSeconds(a, 110_000)).to.equal(70.5);
      expect(releaseLagSeconds(emptyAccount(), 0)).to.equal(RELEASE_LAG_SECONDS);
    });

    it("a hold begins only on a record the budget carries it past, or within the pod wait promise's allowance", () => {
      // 40 s rounds; pods arrive one at a time, 2,000 of them over 10,000 s;
      // then the target falls from 80 to 48 at 10,100 s.
      const obs: Observation[] = [...learned];
      for (let i = 1; i <= 2000; i += 1) {
        obs.push({ at: 40_000 + i * 5000, demand: 60 + (i % 2), target: 80, allocated: 80 });
      }
      const at = 10_100_000;
      obs.push({ at, demand: 31, target: 48, allocated: 80 });
      const many = rounds(obs);
      expect(waitAllowance(many)).to.be.closeTo(0.0075 * (30 + 1000 + 30), 1e-9);
      // Twice the arrivals of a round at that rate (about 0.1 a second): 9; the target's room above demand is 17.
      expect(heldBackAtMost(many, 32, 40_000, 17)).to.equal(1);
      const v: PolicyView = { ...view(at, 31, 80), roundMs: 40_000 };
      expect(waitGuarded(keep(80), v, many, 1.5).applied).to.equal(80);
      // Early on, 30 pods in 40 s and no record of when demand comes back: the pool follows the target.
      const few = rounds([
        ...learned,
        { at: 41_000, demand: 20, target: 32, allocated: 48, requested: 48, releasing: 0 },
      ]);
      const early = waitGuarded(keep(48), { ...view(41_000, 20, 48), roundMs: 40_000 }, few, 1.5);
      expect(early).to.deep.include({ applied: 32, deferred: false });
      expect(early.why?.summary).to.match(/with no record of when demand comes back/);
      // A record of the rise, that the budget carries the hold past: it begins.
      const carried = rounds([
        ...learned,
        { at: 40_000 + 2 * TWO_DAYS * 1000, demand: 30, target: 48, allocated: 48 },
        { at: 41_000 + 2 * TWO_DAYS * 1000, demand: 20, target: 32, allocated: 48 },
      ]);
      const t = 41_000 + 2 * TWO_DAYS * 1000;
      const rising = { ...keep(48), riseLikely: { from: t + 60_000, until: t + 80_000 } };
      expect(
        waitGuarded(rising, { ...view(t, 20, 48), roundMs: 40_000 }, carried, 1.5).applied,
      ).to.equal(48);
      // Rounds too short to matter (no roundMs): nothing changes.
      expect(waitGuarded(keep(48), view(41_000, 20, 48), few, 1.5).applied).to.equal(48);
    });

    it('a hold under way is not let go late while the release could hold back more pods than the allowance', () => {
      const few = rounds([
        ...learned,
        { at: 41_000, demand: 20, target: 32, allocated: 48, requested: 48, releasing: 0 },
      ]);
      // 60 s after the target fell, auto would let go: a late release, at risk of 16 pods.
      const late = waitGuarded(
        { applied: 32, deferred: false },
        { ...view(101_000, 20, 48), roundMs: 40_000 },
        few,
        1.5,
      );
      expect(late).to.deep.include({ applied: 48, deferred: true, recheckAt: 141_000 });
      expect(late.why?.summary).to.match(
        /a release begun now, later than CNS v2's, could hold back/,
      );
    });

    it("a hold the budget cannot carry to the inner policy's next look waits for the pool's round under way to end", () => {
      // batch-jobs-3h at 1.5 (docs/results/auto-budget.md): let go while a
      // round was under way, the release began at its end, 60 s after CNS
      // v2's, and held the next job's rise back by a round.
      const now = 3_600_000;
      const base = { ...earned(8, 3600), lagMs: 40_000 }; // 14,400 IP-s left at 1.5
      const busy: IdleAccount = { ...base, round: { began: now - 10_000, reads: 48 } };
      const v = view(now, 8, 48); // holding 48 spends 28 IP-s a second
      const planned = keep(48, now + 1_000_000); // 28,000 IP-s: more than is left
      const d = budgeted(planned, v, busy, 1.5);
      expect(d).to.deep.include({ applied: 48, recheckAt: now + 30_001 });
      expect(d.why?.summary).to.match(/looked at again when the round under way ends/);
      // With no round under way (or too little left to reach its end) it goes now.
      expect(budgeted(planned, v, base, 1.5)).to.deep.include({ applied: 16, deferred: false });
      const poor = { ...busy, ...earned(8, 5) };
      expect(budgeted(planned, v, { ...poor, lagMs: 40_000 }, 1.5).applied).to.equal(16);
    });

    it('when the budget would run out just before demand is likely back, the hold goes a round ahead, not inside that span', () => {
      const a = earned(8, TWO_DAYS); // 316,800 IP-s left at 1.5
      const now = TWO_DAYS * 1000;
      const v = view(now, 8, 48); // holding 48 spends 28 IP-s a second: 11,314 s
      const runsOut = now + 11_000_000;
      const rising = (from: number, until: number): PolicyDecision => ({
        ...keep(48),
        riseLikely: { from, until },
      });
      // The rise likely from 11,050 s to 11,500 s: it would run out inside it.
      const ahead = budgeted(rising(runsOut + 50_000, runsOut + 500_000), v, a, 1.5);
      expect(ahead).to.deep.include({ applied: 16, deferred: false });
      expect(ahead.why?.summary).to.match(/goes now, a round or more ahead/);
      // Through it: kept, and looked at again a round before it begins.
      const through = budgeted(rising(now + 3_600_000, now + 3_700_000), v, a, 1.5);
      expect(through.applied).to.equal(48);
      expect(through.recheckAt).to.equal(now + 3_600_000 - RELEASE_LAG_SECONDS * 1000);
      // Already inside the span: held while the budget lasts (the rise may come first).
      expect(budgeted(rising(now, runsOut + 500_000), v, a, 1.5).applied).to.equal(48);
    });
  });
});
