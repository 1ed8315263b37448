// The goal table (docs/design/scaling.md#the-goal-table) as `make bench`
// checks it (src/sim/goals.ts).
import { expect } from 'chai';
import { checkGoals, HOLDOUT_GOALS, verdictCell, YARDSTICK_GOALS } from '../../src/sim/goals.ts';
import type { SimulationSummary } from '../../src/sim/summary.ts';

function summary(s: Partial<SimulationSummary>): SimulationSummary {
  return {
    scenario: 't',
    simulatedSeconds: 3600,
    nncWrites: 0,
    reconciles: 0,
    ipsAllocated: 0,
    ipsReleased: 0,
    peakPool: 0,
    peakDemand: 0,
    idleIpSeconds: 0,
    secondsUnderProvisioned: 0,
    pods: 0,
    podWaitP50Seconds: 0,
    podWaitP99Seconds: 0,
    podWaitMaxSeconds: 0,
    podIpRefusals: 0,
    ...s,
  };
}

describe('sim/goals (the goal table)', () => {
  it('has the goals for every yardstick trace', () => {
    expect(Object.keys(YARDSTICK_GOALS)).to.deep.equal([
      'burst-110-11m',
      'flap-24-25-1h',
      'job-waves-2h',
      'diurnal-churn-24h',
    ]);
    const jobs = YARDSTICK_GOALS['job-waves-2h']!.map((g) => g.limit);
    expect(jobs).to.deep.equal([
      { kind: 'times', factor: 0.2 },
      { kind: 'times', factor: 0.6 },
      { kind: 'times', factor: 2.0 },
      { kind: 'plus', seconds: 0.5 },
    ]);
  });

  it('checks absolute limits, multiples of CNS v2 and CNS v2 plus a margin', () => {
    const cns = summary({
      nncWrites: 539,
      ipsAllocated: 2912,
      ipsReleased: 2864,
      idleIpSeconds: 62652,
      podWaitP99Seconds: 2,
    });
    const good = summary({
      nncWrites: 4,
      ipsAllocated: 64,
      ipsReleased: 16,
      idleIpSeconds: 91132,
      podWaitP99Seconds: 2.5,
    });
    const v = checkGoals(YARDSTICK_GOALS['flap-24-25-1h']!, good, cns);
    expect(v.map((x) => [x.figure, x.met])).to.deep.equal([
      ['writes', true],
      ['churn', true],
      ['idle', true],
      ['waitP99', true],
    ]);
    expect(v[1]!.ratio).to.be.closeTo(80 / 5776, 1e-12);
    expect(verdictCell(v[0]!)).to.equal('4 vs 539 (0.01 x; goal <= 10) PASS');
    expect(verdictCell(v[3]!)).to.equal('2.5 s vs 2 s (+0.50 s; goal <= CNS v2 + 0.5 s) PASS');
    const bad = summary({
      ...good,
      nncWrites: 11,
      idleIpSeconds: 94_000,
      podWaitP99Seconds: 2.501,
    });
    expect(checkGoals(YARDSTICK_GOALS['flap-24-25-1h']!, bad, cns).map((x) => x.met)).to.deep.equal(
      [false, true, false, false],
    );
  });

  it('hold-outs: no more writes or churn than CNS v2; idle shown without a goal', () => {
    const cns = summary({ nncWrites: 100, ipsAllocated: 50, ipsReleased: 50, idleIpSeconds: 10 });
    const v = checkGoals(HOLDOUT_GOALS, summary({ nncWrites: 101, idleIpSeconds: 1e9 }), cns);
    expect(v.map((x) => x.met)).to.deep.equal([false, true, true, true]);
    expect(verdictCell(v[2]!)).to.equal('1000000000 vs 10 (100000000.00 x; no goal)');
  });
});
