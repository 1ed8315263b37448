import { expect } from 'chai';
import fc from 'fast-check';
import { dampedTarget, recordTarget, type TargetSample } from '../../src/scaling/damping.ts';

describe('scaling/damping', () => {
  it('is the identity with no delay', () => {
    const h = recordTarget([], 0, 16, 0);
    expect(dampedTarget(h, 0, 32, 0)).to.deep.equal({ target: 16, deferred: false });
  });

  it('applies a higher target at once', () => {
    let h = recordTarget([], 0, 16, 30_000);
    h = recordTarget(h, 1_000, 48, 30_000);
    expect(dampedTarget(h, 1_000, 32, 30_000)).to.deep.equal({ target: 48, deferred: false });
  });

  it('holds a lower target until it has held for the delay', () => {
    let h = recordTarget([], 0, 32, 30_000);
    h = recordTarget(h, 40_000, 16, 30_000);
    expect(dampedTarget(h, 40_000, 32, 30_000)).to.deep.equal({
      target: 32,
      deferred: true,
      recheckAt: 70_000,
    });
    expect(dampedTarget(h, 69_999, 32, 30_000).deferred).to.equal(true);
    expect(dampedTarget(h, 70_000, 32, 30_000)).to.deep.equal({ target: 16, deferred: false });
  });

  it('holds after start until a whole window was observed', () => {
    const h = recordTarget([], 5_000, 16, 30_000);
    expect(dampedTarget(h, 5_000, 32, 30_000)).to.deep.equal({
      target: 32,
      deferred: true,
      recheckAt: 35_000,
    });
    expect(dampedTarget(h, 35_000, 32, 30_000).target).to.equal(16);
  });

  it('a brief dip and a spike restart the clock', () => {
    let h = recordTarget([], 0, 48, 10_000);
    h = recordTarget(h, 20_000, 16, 10_000); // dip
    h = recordTarget(h, 25_000, 48, 10_000); // back up
    h = recordTarget(h, 26_000, 16, 10_000); // down again
    expect(dampedTarget(h, 30_000, 48, 10_000).target).to.equal(48);
    expect(dampedTarget(h, 35_999, 48, 10_000).target).to.equal(48);
    expect(dampedTarget(h, 36_000, 48, 10_000).target).to.equal(16);
  });

  it('steps down through the highest target of the window', () => {
    let h = recordTarget([], 0, 64, 10_000);
    h = recordTarget(h, 1_000, 48, 10_000);
    h = recordTarget(h, 5_000, 16, 10_000);
    const at = dampedTarget(h, 11_000, 64, 10_000);
    expect(at).to.deep.equal({ target: 48, deferred: true, recheckAt: 15_000 });
    expect(dampedTarget(h, 15_000, 48, 10_000)).to.deep.equal({ target: 16, deferred: false });
  });

  it('keeps the history bounded', () => {
    let h: TargetSample[] = [];
    for (let t = 0; t < 10_000; t += 1) h = recordTarget(h, t * 1000, t % 2 === 0 ? 16 : 32, 5_000);
    expect(h.length).to.be.at.most(7);
  });

  it('never applies a target below one that was seen within the delay', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gap: fc.integer({ min: 1, max: 5_000 }),
            target: fc.integer({ min: 1, max: 250 }),
          }),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 1, max: 250 }),
        fc.integer({ min: 0, max: 10_000 }),
        (steps, delay, request, after) => {
          let h: TargetSample[] = [];
          let now = 0;
          const seen: TargetSample[] = [];
          for (const s of steps) {
            now += s.gap;
            h = recordTarget(h, now, s.target, delay);
            seen.push({ at: now, target: s.target });
          }
          now += after;
          const d = dampedTarget(h, now, request, delay);
          const last = seen[seen.length - 1] as TargetSample;
          if (last.target >= request) return d.target === last.target && !d.deferred;
          // Every target computed within the window (and the one in force at
          // its start) is at most what we apply, or we keep the request.
          const windowStart = now - delay;
          const relevant = seen.filter(
            (s, i) => s.at > windowStart || (seen[i + 1]?.at ?? Infinity) > windowStart,
          );
          return (
            d.target <= request &&
            (d.target === request || relevant.every((s) => s.target <= d.target))
          );
        },
      ),
    );
  });
});
