// The token bucket's scheduling: a property over random arrivals (never more
// than burst + qps × window in any window, FIFO, nobody goes before arriving)
// and the pause a 429 causes.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  INITIAL_BUCKET,
  pauseBucket,
  reserve,
  TokenBucket,
} from '../../src/azure/arm/token-bucket.ts';
import type { BucketClock } from '../../src/azure/arm/token-bucket.ts';

describe('token bucket', () => {
  it('never lets more than burst + qps × window go in any window', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.integer({ min: 0, max: 2000 }), { minLength: 1, maxLength: 120 }),
        (qps, burst, gaps) => {
          let state = INITIAL_BUCKET;
          let t = 0;
          const grants: number[] = [];
          for (const gap of gaps) {
            t += gap;
            const r = reserve(state, t, { qps, burst });
            expect(r.at).to.be.at.least(t);
            if (grants.length) expect(r.at).to.be.at.least(grants[grants.length - 1]!);
            grants.push(r.at);
            state = r.state;
          }
          for (let i = 0; i < grants.length; i++) {
            for (let j = i; j < grants.length; j++) {
              const window = grants[j]! - grants[i]!;
              expect(j - i + 1).to.be.at.most(burst + (window * qps) / 1000 + 1e-6);
            }
          }
        },
      ),
    );
  });

  it('lets a burst go at once after a quiet period, then spaces calls by 1/qps', () => {
    let state = INITIAL_BUCKET;
    const at: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = reserve(state, 1000, { qps: 4, burst: 5 });
      at.push(r.at);
      state = r.state;
    }
    expect(at).to.deep.equal([1000, 1000, 1000, 1000, 1000, 1250, 1500]);
  });

  it('after a pause the next call goes at its end and the rest one interval apart', () => {
    const config = { qps: 4, burst: 20 };
    const state = pauseBucket(INITIAL_BUCKET, 5000, config);
    const a = reserve(state, 0, config);
    const b = reserve(a.state, 0, config);
    expect([a.at, b.at]).to.deep.equal([5000, 5250]);
  });

  it('holds back a call already waiting for its slot when a pause begins', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const holder: { bucket?: TokenBucket } = {};
    const clock: BucketClock = {
      now: () => now,
      sleep: async (ms) => {
        sleeps.push(ms);
        if (sleeps.length === 1) holder.bucket!.pauseFor(2000 - now); // a 429 elsewhere, during the wait
        now += ms;
      },
    };
    const bucket = new TokenBucket({ qps: 1, burst: 1 }, clock);
    holder.bucket = bucket;
    await bucket.take();
    const waited = await bucket.take();
    expect(now).to.be.at.least(2000);
    expect(waited).to.be.at.least(2000);
  });

  it('rejects a bad configuration with the flag name', () => {
    expect(() => new TokenBucket({ qps: 0, burst: 1 })).to.throw(/--azure-qps/);
    expect(() => new TokenBucket({ qps: 1, burst: 0 })).to.throw(/--azure-burst/);
  });
});
