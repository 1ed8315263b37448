import { expect } from 'chai';
import fc from 'fast-check';
import { DEFAULT_MAX_IPS, type Scaler } from '../../src/scaling/scaler.ts';
import { calculateTarget, sanitiseDemand } from '../../src/scaling/target.ts';

// The cases of the CNS IPAM v2 math tables, ported as data.
const targetTable: { name: string; demand: number; batch: number; buffer: number; want: number }[] =
  [
    { name: 'base case', demand: 0, batch: 16, buffer: 0.5, want: 16 },
    { name: '1/2 demand', demand: 8, batch: 16, buffer: 0.5, want: 16 },
    { name: '1x demand', demand: 16, batch: 16, buffer: 0.5, want: 32 },
    { name: '2x demand', demand: 32, batch: 16, buffer: 0.5, want: 48 },
    { name: '3x demand', demand: 48, batch: 16, buffer: 0.5, want: 64 },
    { name: 'batch of one (min batch)', demand: 10, batch: 1, buffer: 0.5, want: 11 },
    { name: 'zero buffer (no minfree)', demand: 10, batch: 16, buffer: 0, want: 16 },
    { name: 'zero buffer batch of one (no overhead)', demand: 13, batch: 1, buffer: 0, want: 13 },
  ];

const clampTable: {
  name: string;
  demand: number;
  batch: number;
  buffer: number;
  max: number;
  want: number;
}[] = [
  { name: 'base case', demand: 0, batch: 16, buffer: 0.5, max: 100, want: 16 },
  { name: 'clamp to max', demand: 500, batch: 16, buffer: 0.5, max: 250, want: 250 },
];

describe('scaling/target', () => {
  describe('CNS table: target without clamping', () => {
    for (const tt of targetTable) {
      it(tt.name, () => {
        const scaler: Scaler = { batch: tt.batch, buffer: tt.buffer, max: DEFAULT_MAX_IPS };
        expect(calculateTarget(tt.demand, scaler)).to.equal(tt.want);
      });
    }
  });

  describe('CNS table: target clamped to max', () => {
    for (const tt of clampTable) {
      it(tt.name, () => {
        expect(
          calculateTarget(tt.demand, { batch: tt.batch, buffer: tt.buffer, max: tt.max }),
        ).to.equal(tt.want);
      });
    }
  });

  describe('garbage demand', () => {
    const scaler: Scaler = { batch: 16, buffer: 0.5, max: 250 };
    it('treats NaN and negative demand as zero', () => {
      expect(calculateTarget(Number.NaN, scaler)).to.equal(16);
      expect(calculateTarget(-40, scaler)).to.equal(16);
      expect(calculateTarget(Number.NEGATIVE_INFINITY, scaler)).to.equal(16);
    });
    it('treats infinite demand as needing the max', () => {
      expect(calculateTarget(Number.POSITIVE_INFINITY, scaler)).to.equal(250);
    });
    it('rounds fractional demand down', () => {
      expect(sanitiseDemand(15.9)).to.equal(15);
      expect(calculateTarget(15.9, scaler)).to.equal(calculateTarget(15, scaler));
    });
    it('does not add a batch for float noise', () => {
      // 0.07 + 93/100 is 1.0000000000000002 in floating point.
      expect(calculateTarget(93, { batch: 100, buffer: 0.07, max: 250 })).to.equal(100);
    });
    it('survives a hand-built scaler with garbage fields', () => {
      const t = calculateTarget(10, { batch: Number.NaN, buffer: Number.NaN, max: -3 });
      expect(t).to.equal(1);
      expect(calculateTarget(10, { batch: 0, buffer: -0.5, max: 1e9 })).to.equal(11);
    });
  });

  describe('properties', () => {
    const scalerArb = fc.record({
      batch: fc.integer({ min: 1, max: 250 }),
      percent: fc.integer({ min: 0, max: 300 }),
      max: fc.integer({ min: 1, max: 250 }),
    });
    const demandArb = fc.integer({ min: 0, max: 1000 });

    function scalerOf(s: { batch: number; percent: number; max: number }): Scaler {
      return { batch: Math.min(s.batch, s.max), buffer: s.percent / 100, max: s.max };
    }

    it('target is a multiple of batch or equals max', () => {
      fc.assert(
        fc.property(scalerArb, demandArb, (s, demand) => {
          const scaler = scalerOf(s);
          const t = calculateTarget(demand, scaler);
          return t === scaler.max || t % scaler.batch === 0;
        }),
      );
    });

    it('when not clamped, keeps at least buffer×batch and less than one batch more free', () => {
      fc.assert(
        fc.property(scalerArb, demandArb, (s, demand) => {
          const scaler = scalerOf(s);
          const t = calculateTarget(demand, scaler);
          if (t === scaler.max) return true;
          const free = t - demand;
          const floor = scaler.buffer * scaler.batch;
          return free >= floor - 1e-9 && free < floor + scaler.batch;
        }),
      );
    });

    it('is monotone in demand', () => {
      fc.assert(
        fc.property(scalerArb, demandArb, demandArb, (s, a, b) => {
          const scaler = scalerOf(s);
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          return calculateTarget(lo, scaler) <= calculateTarget(hi, scaler);
        }),
      );
    });

    it('is never negative, NaN or above 250 whatever the inputs', () => {
      const anyNumber = fc.oneof(
        fc.double(),
        fc.integer(),
        fc.constantFrom(Number.NaN, Infinity, -Infinity, 0, -0, 1e308, -1e308),
      );
      fc.assert(
        fc.property(anyNumber, anyNumber, anyNumber, anyNumber, (demand, batch, buffer, max) => {
          const t = calculateTarget(demand, { batch, buffer, max });
          return Number.isInteger(t) && t >= 0 && t <= 250;
        }),
        { numRuns: 2000 },
      );
    });
  });
});
