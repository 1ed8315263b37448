import { expect } from 'chai';
import { BUILT_IN_TRACES, parseTraceCsv, TraceError } from '../../src/sim/trace.ts';

describe('sim/trace', () => {
  it('every built-in trace starts at 0, is sorted and has non-negative integer demand', () => {
    for (const [name, make] of Object.entries(BUILT_IN_TRACES)) {
      const trace = make();
      expect(trace.name, name).to.equal(name);
      expect(trace.points[0]?.t, name).to.equal(0);
      for (let i = 1; i < trace.points.length; i += 1) {
        expect(trace.points[i]!.t, name).to.be.at.least(trace.points[i - 1]!.t);
      }
      for (const p of trace.points) {
        expect(Number.isInteger(p.demand) && p.demand >= 0, `${name} at ${p.t}`).to.equal(true);
      }
      expect(trace.durationSeconds).to.be.at.least(trace.points.at(-1)!.t);
    }
  });

  it('parses a CSV with a header, comments and the optional exhausted column', () => {
    const trace = parseTraceCsv(
      'seconds,demand,exhausted\n# warm up\n0,3\n30,40,true\n90,5,false\n',
    );
    expect(trace.points).to.deep.equal([
      { t: 0, demand: 3 },
      { t: 30, demand: 40, exhausted: true },
      { t: 90, demand: 5, exhausted: false },
    ]);
    expect(trace.durationSeconds).to.equal(390);
  });

  it('starts a trace at zero demand when the file begins later', () => {
    expect(parseTraceCsv('10,5').points).to.deep.equal([
      { t: 0, demand: 0 },
      { t: 10, demand: 5 },
    ]);
  });

  for (const [text, fragment] of [
    ['0,-1', 'demand must be a non-negative integer'],
    ['0,1.5', 'demand must be a non-negative integer'],
    ['abc,1\nx,2', 'bad seconds'],
    ['10,1\n5,2', 'seconds go backwards'],
    ['0,1,maybe', 'exhausted must be true or false'],
    ['0', 'expected "seconds,demand[,exhausted]"'],
    ['# nothing\n', 'no data lines'],
  ] as const) {
    it(`rejects ${JSON.stringify(text)} with "${fragment}"`, () => {
      expect(() => parseTraceCsv(text, 'f.csv'))
        .to.throw(TraceError)
        .with.property('message')
        .that.contains(fragment);
    });
  }
});
