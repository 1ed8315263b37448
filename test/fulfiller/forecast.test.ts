// The subnet exhaustion forecast: free addresses over the net allocation rate
// of a sliding window, with an injected clock (plain ms numbers).
import { expect } from 'chai';
import fc from 'fast-check';
import {
  ExhaustionForecaster,
  exhaustionForecastSeconds,
  type FreeSample,
} from '../../src/fulfiller/forecast.ts';

const MIN = 60_000;

describe('fulfiller/forecast (subnet exhaustion forecast)', () => {
  it('free addresses over the net allocation rate of the window', () => {
    // 1,000 free 5 min ago, 700 now: 1 address/s, 700 s left.
    const samples: FreeSample[] = [
      { at: 0, free: 1000 },
      { at: 2 * MIN, free: 900 },
      { at: 5 * MIN, free: 700 },
    ];
    expect(exhaustionForecastSeconds(samples, 5 * MIN)).to.equal(700);
    // Only the last 10 min count: the step before the window is its value at the start.
    const old: FreeSample[] = [
      { at: 0, free: 5000 },
      { at: 1 * MIN, free: 1000 },
      { at: 11 * MIN, free: 400 },
    ];
    expect(exhaustionForecastSeconds(old, 11 * MIN)).to.equal(400);
  });

  it('+Inf when the rate is not positive, 0 when nothing is free, none with under a minute of history', () => {
    expect(exhaustionForecastSeconds([{ at: 0, free: 50 }], 5 * MIN)).to.equal(Infinity);
    const growing = [
      { at: 0, free: 50 },
      { at: MIN, free: 80 },
    ];
    expect(exhaustionForecastSeconds(growing, 2 * MIN)).to.equal(Infinity);
    expect(exhaustionForecastSeconds([{ at: 0, free: 0 }], 2 * MIN)).to.equal(0);
    expect(exhaustionForecastSeconds([{ at: 0, free: 50 }], 59_999)).to.equal(undefined);
    expect(exhaustionForecastSeconds([], 5 * MIN)).to.equal(undefined);
    expect(exhaustionForecastSeconds([{ at: 0, free: 9 }], 1000, { minSpanMs: 500 })).to.equal(
      Infinity,
    );
  });

  it('the forecaster keeps per-subnet samples, coalesces within a second and forgets gone subnets', () => {
    const f = new ExhaustionForecaster();
    f.record('a', 100, 0);
    f.record('a', 99, 100);
    f.record('a', 90, 200); // same second as the one before: replaces it
    expect(f.size('a')).to.equal(2);
    f.record('a', 90, 30_000); // unchanged: no new sample
    expect(f.size('a')).to.equal(2);
    f.record('a', 70, 2 * MIN);
    expect(f.forecast('a', 2 * MIN)).to.equal(70 / (30 / 120));
    expect(f.forecast('b', 2 * MIN)).to.equal(undefined);
    f.record('a', 60, MIN); // time never goes back
    expect(f.forecast('a', 2 * MIN)).to.equal(70 / (30 / 120));
    f.keepOnly(new Set(['b']));
    expect(f.size('a')).to.equal(0);
  });

  it('properties: bounded memory; forecast x rate = free; never negative', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 20_000 }), free: fc.nat(5000) }), {
          minLength: 1,
          maxLength: 400,
        }),
        (steps) => {
          const f = new ExhaustionForecaster({ windowMs: MIN, resolutionMs: 1000, minSpanMs: 1 });
          let now = 0;
          for (const s of steps) {
            now += s.dt;
            f.record('s', s.free, now);
            expect(f.size('s')).to.be.at.most(MIN / 1000 + 2);
          }
          const last = steps[steps.length - 1]!.free;
          const seconds = f.forecast('s', now + 1);
          if (seconds === undefined) return;
          expect(seconds).to.be.at.least(0);
          if (last === 0) expect(seconds).to.equal(0);
        },
      ),
    );
    // The same history gives the same forecast however it is sampled in between.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 50 }),
        (free, per) => {
          const dense = new ExhaustionForecaster();
          const sparse = new ExhaustionForecaster();
          for (let s = 0; s <= 600; s++) dense.record('x', free + per * (600 - s), s * 1000);
          sparse.record('x', free + per * 600, 0);
          sparse.record('x', free, 600_000);
          const a = dense.forecast('x', 600_000)!;
          expect(a).to.be.closeTo(sparse.forecast('x', 600_000)!, 1e-9);
          expect(a).to.be.closeTo(free / per, 1e-9);
        },
      ),
    );
  });
});
