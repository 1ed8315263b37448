import { expect } from 'chai';
import fc from 'fast-check';
import { exhaustionLevels, nextExhausted } from '../../src/fulfiller/exhaustion.ts';

describe('fulfiller/exhaustion', () => {
  const levels = exhaustionLevels(10, 6);

  it('flips at the threshold and recovers only above the margin', () => {
    expect(nextExhausted(undefined, 10, levels)).to.equal(false);
    expect(nextExhausted(false, 9, levels)).to.equal(true);
    expect(nextExhausted(true, 12, levels)).to.equal(true);
    expect(nextExhausted(true, 15, levels)).to.equal(true);
    expect(nextExhausted(true, 16, levels)).to.equal(false);
    expect(nextExhausted(false, 12, levels)).to.equal(false);
  });

  it('property: below the threshold always exhausted, at recovery level never', () => {
    fc.assert(
      fc.property(fc.option(fc.boolean(), { nil: undefined }), fc.nat(100), (prev, free) => {
        const next = nextExhausted(prev, free, levels);
        if (free < 10) return next === true;
        if (free >= 16) return next === false;
        return next === (prev === true);
      }),
    );
  });
});
