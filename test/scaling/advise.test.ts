import { expect } from 'chai';
import { buildAdvice, candidateBatches, rank } from '../../src/scaling/advise/advise.ts';
import { adviseOnHistory } from '../../src/scaling/advise/history.ts';
import { runPoolModel } from '../../src/scaling/advise/pool-model.ts';
import { autoPolicy } from '../../src/scaling/policies/auto/auto.ts';
import { fixedDelayPolicy } from '../../src/scaling/policies/fixed-delay.ts';
import { runSimulation } from '../../src/sim/simulate.ts';
import { BUILT_IN_TRACES } from '../../src/sim/trace.ts';

const scaler = { batch: 16, buffer: 0.5, max: 250 };
const spec = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const flap = BUILT_IN_TRACES['flap-24-25-1h']!();
const points = flap.points.map((p) => ({ at: p.t * 1000, demand: p.demand }));

describe('scaling/advise', () => {
  it('the pool model stays within a few per cent of the real simulation', async () => {
    for (const make of [() => fixedDelayPolicy(0), () => autoPolicy()]) {
      const m = runPoolModel({
        points,
        durationMs: flap.durationSeconds * 1000,
        scaler,
        policy: make(),
        fulfilDelayMs: 2000,
        initialPool: 16,
      });
      const { summary: s } = await runSimulation({
        trace: flap,
        scaler: spec,
        releaseDelaySeconds: 0,
        policy: make(),
        fulfilDelaySeconds: 2,
      });
      expect(Math.abs(m.nncWrites - s.nncWrites)).to.be.at.most(0.05 * s.nncWrites + 1);
      expect(Math.abs(m.idleIpSeconds - s.idleIpSeconds)).to.be.at.most(0.05 * s.idleIpSeconds);
      const churn = (x: { ipsAllocated: number; ipsReleased: number }): number =>
        x.ipsAllocated + x.ipsReleased;
      expect(Math.abs(churn(m) - churn(s))).to.be.at.most(0.05 * churn(s) + 16);
    }
  });

  it('candidate batches: half, the same, double and the common ones, within max', () => {
    expect(candidateBatches(16, 250)).to.deep.equal([8, 16, 32]);
    expect(candidateBatches(10, 20)).to.deep.equal([5, 8, 10, 16, 20]);
  });

  it('ranks what fits the budget first, then fewest writes', () => {
    const base = {
      nncWrites: 100,
      ipsAllocated: 50,
      ipsReleased: 50,
      idleIpSeconds: 1000,
      podWaitP99Seconds: 1,
    };
    const c = (policy: string, writes: number, idle: number, wait = 1) => ({
      batch: 16,
      policy,
      releaseDelay: policy,
      ...base,
      nncWrites: writes,
      idleIpSeconds: idle,
      podWaitP99Seconds: wait,
    });
    const ranked = rank(
      base,
      [c('a', 10, 5000), c('b', 50, 1200), c('c', 40, 1100, 2), c('d', 60, 900)],
      1.25,
    );
    expect(ranked.map((r) => [r.policy, r.fits])).to.deep.equal([
      ['b', true],
      ['d', true],
      ['a', false],
      ['c', false],
    ]);
  });

  it('on the 24 <-> 25 flap the advice cuts writes within the budget and says why with figures', () => {
    const a = adviseOnHistory({
      source: 'flap',
      points,
      durationMs: flap.durationSeconds * 1000,
      scaler,
      fulfilDelayMs: 2000,
      idleRatio: 1.25,
    });
    expect(a.current).to.include({ batch: 16, policy: 'cns-v2' });
    expect(a.best.fits).to.equal(true);
    expect(a.best.nncWrites).to.be.lessThan(a.current.nncWrites / 10);
    expect(a.best.idleIpSeconds).to.be.at.most(a.budget.idleIpSeconds);
    expect(a.summary).to.include(
      `${a.best.nncWrites} NNC writes instead of ${a.current.nncWrites}`,
    );
  });

  it('says to keep the setting when nothing fits better', () => {
    const only = [
      {
        batch: 16,
        policy: 'cns-v2',
        releaseDelay: '0',
        nncWrites: 3,
        ipsAllocated: 16,
        ipsReleased: 0,
        idleIpSeconds: 100,
        podWaitP99Seconds: 0,
      },
    ];
    expect(buildAdvice('x', 60, 16, only, 1.25).summary).to.match(/^keep batch 16/);
  });
});
