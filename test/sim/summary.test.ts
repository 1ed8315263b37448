import { expect } from 'chai';
import fc from 'fast-check';
import { peakIdleRatio } from '../../src/sim/frontier.ts';
import { idleSoFar, summarize, type Sample } from '../../src/sim/summary.ts';

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

  it("idle so far: a pair where the idle rate changes and one at the end, the last idle the summary's", () => {
    const samples: Sample[] = [
      { t: 0, demand: 0, requested: 16, allocated: 16 },
      { t: 10, demand: 0, requested: 16, allocated: 16 }, // same rate: no pair
      { t: 20, demand: 20, requested: 32, allocated: 16 }, // under-provisioned: rate 0
      { t: 25, demand: 20, requested: 32, allocated: 32 },
      { t: 40, demand: 5, requested: 16, allocated: 16 },
    ];
    expect(idleSoFar(samples, 50)).to.deep.equal([0, 0, 20, 320, 25, 320, 40, 500, 50, 610]);
    expect(summarize('s', samples, 50, { nncWrites: 0, reconciles: 0 }).idleIpSeconds).to.equal(
      610,
    );
    expect(idleSoFar(samples, 22)).to.deep.equal([0, 0, 20, 320, 22, 320]);
  });

  it('peak idle ratio: the highest ratio so far at any moment, not only at the end', () => {
    // CNS v2 idles 8 IPs throughout; the run 24 for its first 100 s, then 8: 3x at 100 s, 1.4x at 400 s.
    const cns = [0, 0, 400, 3200];
    const run = [0, 0, 100, 2400, 400, 4800];
    expect(peakIdleRatio(run, cns)).to.deep.equal({ ratio: 3, at: 100 });
    expect(peakIdleRatio(cns, cns)).to.deep.equal({ ratio: 1, at: 400 });
    expect(peakIdleRatio([], [])).to.equal(undefined);
  });

  it('peak idle ratio equals the highest ratio on a whole-second grid of integer-timed runs', () => {
    const step = fc.record({ dt: fc.integer({ min: 1, max: 30 }), idle: fc.nat(40) });
    const series = fc.array(step, { minLength: 1, maxLength: 20 });
    // CNS v2 always has idle IPs from the start (its buffer), as in every simulated run.
    const cnsSeries = series.filter((steps) => steps[0]!.idle > 0);
    fc.assert(
      fc.property(series, cnsSeries, (a, b) => {
        const toSamples = (steps: typeof a): Sample[] => {
          let t = 0;
          return steps.map((s) => {
            const out = { t, demand: 10, requested: 10 + s.idle, allocated: 10 + s.idle };
            t += s.dt;
            return out;
          });
        };
        const end = 300;
        const run = idleSoFar(toSamples(a), end);
        const cns = idleSoFar(toSamples(b), end);
        const at = (pairs: number[], t: number): number => {
          let v = 0;
          for (let k = 0; k < pairs.length; k += 2) {
            if (pairs[k]! > t) break;
            const next = pairs[k + 2];
            v =
              next === undefined
                ? pairs[k + 1]!
                : pairs[k + 1]! +
                  ((pairs[k + 3]! - pairs[k + 1]!) * (t - pairs[k]!)) / (next - pairs[k]!);
          }
          return v;
        };
        let best: number | undefined;
        for (let t = 1; t <= end; t++) {
          const c = at(cns, t);
          if (c > 0) best = Math.max(best ?? 0, at(run, t) / c);
        }
        const peak = peakIdleRatio(run, cns);
        expect(peak!.ratio).to.be.closeTo(best!, 1e-9);
      }),
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
