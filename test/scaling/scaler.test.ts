import { expect } from 'chai';
import fc from 'fast-check';
import { applyExhaustion, normaliseScaler } from '../../src/scaling/scaler.ts';
import { calculateTarget } from '../../src/scaling/target.ts';

describe('scaling/scaler', () => {
  it('derives batch, buffer and max like CNS', () => {
    const { scaler, warnings } = normaliseScaler({
      batchSize: 16,
      requestThresholdPercent: 50,
      releaseThresholdPercent: 150,
      maxIPCount: 250,
    });
    expect(scaler).to.deep.equal({ batch: 16, buffer: 0.5, max: 250 });
    expect(warnings).to.deep.equal([]);
  });

  it('caps max at 250 and batch at max without warnings', () => {
    const { scaler, warnings } = normaliseScaler({
      batchSize: 64,
      requestThresholdPercent: 50,
      maxIPCount: 30,
    });
    expect(scaler).to.deep.equal({ batch: 30, buffer: 0.5, max: 30 });
    expect(warnings).to.deep.equal([]);
    expect(
      normaliseScaler({ batchSize: 16, requestThresholdPercent: 50, maxIPCount: 1000 }).scaler.max,
    ).to.equal(250);
  });

  it('uses the absolute value of a negative threshold', () => {
    expect(
      normaliseScaler({ batchSize: 16, requestThresholdPercent: -50, maxIPCount: 250 }).scaler
        .buffer,
    ).to.equal(0.5);
  });

  for (const bad of [undefined, 0, -5, Number.NaN, Number.POSITIVE_INFINITY, '250', null, 0.4]) {
    it(`maxIPCount ${String(bad)} means 250 with a warning naming the field`, () => {
      const { scaler, warnings } = normaliseScaler({
        batchSize: 16,
        requestThresholdPercent: 50,
        maxIPCount: bad as number,
      });
      expect(scaler.max).to.equal(250);
      expect(warnings.map((w) => w.field)).to.deep.equal(['maxIPCount']);
      expect(warnings[0]?.message).to.contain('maxIPCount');
      expect(Object.is(warnings[0]?.value, bad)).to.equal(true);
    });
  }

  for (const bad of [undefined, 0, -16, Number.NaN, '16', {}]) {
    it(`batchSize ${JSON.stringify(bad) ?? 'undefined'} means 1 with a warning naming the field`, () => {
      const { scaler, warnings } = normaliseScaler({
        batchSize: bad as number,
        requestThresholdPercent: 50,
        maxIPCount: 250,
      });
      expect(scaler.batch).to.equal(1);
      expect(warnings.map((w) => w.field)).to.deep.equal(['batchSize']);
      expect(warnings[0]?.message).to.contain('batchSize');
    });
  }

  it('a missing scaler gives defaults and names every field', () => {
    const { scaler, warnings } = normaliseScaler(undefined);
    expect(scaler).to.deep.equal({ batch: 1, buffer: 0, max: 250 });
    expect(warnings.map((w) => w.field)).to.deep.equal([
      'maxIPCount',
      'batchSize',
      'requestThresholdPercent',
    ]);
  });

  it('never throws and never yields NaN whatever the object', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            batchSize: fc.anything(),
            requestThresholdPercent: fc.anything(),
            maxIPCount: fc.anything(),
          },
          { requiredKeys: [] },
        ),
        (raw) => {
          const { scaler } = normaliseScaler(raw as never);
          return (
            Number.isInteger(scaler.batch) &&
            Number.isInteger(scaler.max) &&
            Number.isFinite(scaler.buffer) &&
            scaler.batch >= 1 &&
            scaler.batch <= scaler.max &&
            scaler.max <= 250 &&
            scaler.buffer >= 0
          );
        },
      ),
    );
  });

  describe('exhaustion', () => {
    it('overrides batch and buffer to 1 and keeps max', () => {
      expect(applyExhaustion({ batch: 16, buffer: 0.5, max: 100 }, true)).to.deep.equal({
        batch: 1,
        buffer: 1,
        max: 100,
      });
    });
    it('leaves the scaler alone when not exhausted', () => {
      const s = { batch: 16, buffer: 0.5, max: 100 };
      expect(applyExhaustion(s, false)).to.equal(s);
    });
    it('asks for demand + 1 while exhausted', () => {
      const s = applyExhaustion({ batch: 16, buffer: 0.5, max: 250 }, true);
      expect(calculateTarget(20, s)).to.equal(21);
      expect(calculateTarget(0, s)).to.equal(1);
      expect(calculateTarget(400, s)).to.equal(250);
    });
  });
});
