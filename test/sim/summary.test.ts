import { expect } from 'chai';
import fc from 'fast-check';
import { hourlyIdle, summarize, type Sample } from '../../src/sim/summary.ts';

describe('sim/summary', () => {
  it('integrates idle IPs and under-provisioned time over the step function', () => {
    const samples: Sample[] = [
      { t: 0, demand: 0, requested: 16, allocated: 16 },
      { t: 10, demand: 20, requested: 32, allocated: 16 },
      { t: 15, demand: 20, requested: 32, allocated: 32 },
      { t: 30, demand: 5, requested: 16, allocated: 16 },
    ];
    const s = summarize('t', samples, 40, { nncWrites: 3, reconciles: 5 });
    // idle: 16×10 + 0×5 + 12×15 + 11×10 = 160 + 180 + 110
    expect(s.idleIpSeconds).to.equal(450);
    expect(s.secondsUnderProvisioned).to.equal(5);
    expect(s.ipsAllocated).to.equal(32);
    expect(s.ipsReleased).to.equal(16);
    expect(s.peakPool).to.equal(32);
    expect(s.peakDemand).to.equal(20);
    expect(s.nncWrites).to.equal(3);
    expect(s.pods).to.equal(0);
    expect(s.podWaitP99Seconds).to.equal(0);
  });

  it('hourly idle: the idle so far at the end of each whole hour, the last one the whole run when it ends on an hour', () => {
    const samples: Sample[] = [
      { t: 0, demand: 0, requested: 16, allocated: 16 },
      { t: 3000, demand: 10, requested: 16, allocated: 16 },
      { t: 5000, demand: 20, requested: 32, allocated: 32 },
    ];
    // 16 x 3000 + 6 x 600 by 1 h; + 6 x 1400 + 12 x 2200 by 2 h; a partial third hour has no entry.
    expect(hourlyIdle(samples, 7200)).to.deep.equal([51_600, 86_400]);
    expect(hourlyIdle(samples, 8000)).to.deep.equal([51_600, 86_400]);
    expect(summarize('h', samples, 7200, { nncWrites: 0, reconciles: 0 }).idleIpSeconds).to.equal(
      86_400,
    );
  });

  it('pod waits: nearest-rank median, 99th percentile and worst, in seconds to the ms', () => {
    const waits = [...Array.from({ length: 98 }, () => 0), 1.23456, 7];
    const s = summarize('w', [{ t: 0, demand: 0, requested: 0, allocated: 0 }], 1, {
      nncWrites: 0,
      reconciles: 0,
      podWaitsSeconds: waits,
      podIpRefusals: 2,
    });
    expect(s).to.include({
      pods: 100,
      podWaitP50Seconds: 0,
      podWaitP99Seconds: 1.235,
      podWaitMaxSeconds: 7,
      podIpRefusals: 2,
    });
  });

  it('allocated minus released equals the final pool, whatever the timeline', () => {
    const sample = fc.record({
      dt: fc.integer({ min: 0, max: 100 }),
      demand: fc.nat(250),
      allocated: fc.nat(250),
    });
    fc.assert(
      fc.property(fc.array(sample, { minLength: 1, maxLength: 50 }), (raw) => {
        let t = 0;
        const samples = raw.map((r) => {
          t += r.dt;
          return { t, demand: r.demand, requested: r.allocated, allocated: r.allocated };
        });
        const s = summarize('p', samples, t + 10, { nncWrites: 0, reconciles: 0 });
        expect(s.ipsAllocated - s.ipsReleased).to.equal(samples.at(-1)!.allocated);
        expect(s.idleIpSeconds).to.be.at.least(0);
        expect(s.secondsUnderProvisioned).to.be.at.most(t + 10);
      }),
    );
  });
});
