// The control plane's speed in a replay (src/sim/fulfil-timing.ts): drawn
// from the backends' timings, the same for every policy at the same moment.
import { expect } from 'chai';
import fc from 'fast-check';
import { REALISTIC_OPERATION_MS } from '../../harness/azure-emulator/operations.ts';
import { AZURE_OPERATION_MS } from '../../src/sim/control-plane-timings.ts';
import { parseFulfilTiming, roundDurations, SPEED_SPAN_MS } from '../../src/sim/fulfil-timing.ts';

describe('sim: fulfil timings', () => {
  it("draws from the ARM emulator's realistic ranges", () => {
    expect(AZURE_OPERATION_MS).to.deep.equal(REALISTIC_OPERATION_MS);
  });

  it('azure: a round ends at the first poll (every 10 s) after an operation of 10-60 s', () => {
    const d = roundDurations('azure', 7);
    const seen = new Set<number>();
    for (let span = 0; span < 2000; span += 1) seen.add(d(span * SPEED_SPAN_MS));
    expect([...seen].sort((a, b) => a - b)).to.deep.equal([20_000, 30_000, 40_000, 50_000, 60_000]);
  });

  it('azure: each of 20-60 s about as often as the uniform operation makes it', () => {
    const d = roundDurations('azure', 3);
    const counts = new Map<number, number>();
    const n = 10_000;
    for (let span = 0; span < n; span += 1) {
      const ms = d(span * SPEED_SPAN_MS);
      counts.set(ms, (counts.get(ms) ?? 0) + 1);
    }
    // (10, 20] s and each later 10 s: a fifth each.
    for (const ms of [20_000, 30_000, 40_000, 50_000, 60_000]) {
      expect(counts.get(ms)! / n).to.be.closeTo(0.2, 0.02);
    }
  });

  it('cidr: one status write, 20 ms to 1 s', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.nat(), (seed, start) => {
        const ms = roundDurations('cidr', seed)(start);
        expect(ms).to.be.within(20, 1000);
      }),
    );
  });

  it('a round started in the same span takes as long, whoever started it; the seed changes the draws', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.nat({ max: 10 ** 9 }),
        fc.nat({ max: SPEED_SPAN_MS - 1 }),
        (seed, start, offset) => {
          const base = Math.floor(start / SPEED_SPAN_MS) * SPEED_SPAN_MS;
          expect(roundDurations('azure', seed)(base + offset)).to.equal(
            roundDurations('azure', seed)(base),
          );
        },
      ),
    );
    const spans = Array.from({ length: 50 }, (_, i) => i * SPEED_SPAN_MS);
    expect(spans.map(roundDurations('azure', 1))).not.to.deep.equal(
      spans.map(roundDurations('azure', 2)),
    );
  });

  it('parses a name or seconds, and refuses anything else', () => {
    expect(parseFulfilTiming('azure')).to.equal('azure');
    expect(parseFulfilTiming('2')).to.deep.equal({ fixedMs: 2000 });
    expect(() => parseFulfilTiming('fast')).to.throw(/cidr, azure, azure-scale-set or seconds/);
    expect(() => parseFulfilTiming('-1')).to.throw(/fulfil timing/);
  });
});
