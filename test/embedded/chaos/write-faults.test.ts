// Which writes fail under chaos: never fewer than RATE of them at any point,
// only writes, the same ones for the same seed, no 409 on a create.
import { expect } from 'chai';
import fc from 'fast-check';
import { WriteFaults } from '../../../harness/embedded/chaos/write-faults.ts';
import { NNC_PLURAL } from '../../../src/nnc/types.ts';
import { seededRandom } from '../../../src/sim/random.ts';

const VERBS = ['create', 'update', 'patch', 'delete', 'get', 'list', 'watch'] as const;

describe('embedded/chaos: write faults', () => {
  it('fails at least RATE of the writes after every write, only writes, no 409 on create', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer(),
        fc.array(fc.constantFrom(...VERBS), { minLength: 1, maxLength: 400 }),
        (rate, seed, verbs) => {
          const f = new WriteFaults(rate, seededRandom(seed));
          let writes = 0;
          for (const verb of verbs) {
            const fault = f.decide({ verb, resource: NNC_PLURAL, subresource: '' });
            const write = !['get', 'list', 'watch'].includes(verb);
            if (!write) expect(fault).to.equal(undefined);
            else writes += 1;
            if (fault && verb === 'create') expect(fault.status).to.not.equal(409);
            if (fault?.status === 429) expect(fault.retryAfterSeconds).to.be.greaterThan(0);
            if (fault?.afterCommit) expect(fault.status).to.equal(500);
            expect(f.counts.writes).to.equal(writes);
            expect(f.counts.faults).to.be.at.least(rate * writes - 1e-9);
          }
        },
      ),
    );
  });

  it('decides the same for the same seed, and spreads over 500, 429 and 409', () => {
    const run = (seed: number): string => {
      const f = new WriteFaults(0.2, seededRandom(seed));
      return Array.from({ length: 300 }, () =>
        String(f.decide({ verb: 'patch', resource: 'pods', subresource: '' })?.status ?? '-'),
      ).join(',');
    };
    const a = run(42);
    expect(run(42)).to.equal(a);
    expect(run(43)).to.not.equal(a);
    const f = new WriteFaults(0.2, seededRandom(1));
    for (let i = 0; i < 3000; i += 1)
      f.decide({ verb: 'update', resource: 'leases', subresource: '' });
    const share = f.counts.faults / f.counts.writes;
    expect(share).to.be.within(0.2, 0.26);
    for (const n of Object.values(f.counts.byStatus)) expect(n).to.be.greaterThan(100);
    // About half the 500s are applied before they are answered.
    expect(f.counts.lostAnswers / f.counts.byStatus['500']).to.be.within(0.35, 0.65);
  });

  it('stops failing once disabled, and refuses a rate outside [0, 1]', () => {
    const f = new WriteFaults(1, seededRandom(1));
    expect(f.decide({ verb: 'create', resource: 'pods', subresource: '' })).to.not.equal(undefined);
    f.disable();
    expect(f.decide({ verb: 'create', resource: 'pods', subresource: '' })).to.equal(undefined);
    expect(f.counts).to.include({ writes: 2, chaosWrites: 1, faults: 1 });
    expect(() => new WriteFaults(1.5, Math.random)).to.throw('[0, 1]');
    expect(() => new WriteFaults(Number.NaN, Math.random)).to.throw('[0, 1]');
  });
});
