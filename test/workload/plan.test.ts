import { expect } from 'chai';
import fc from 'fast-check';
import { planScenario, plannedDemand, spreadTimes } from '../../harness/workload/plan.ts';
import { parseScenario } from '../../harness/workload/scenario.ts';

const scenario = (steps: unknown[], durationSeconds = 60) =>
  parseScenario({ name: 't', durationSeconds, steps });

describe('sim/workload/plan', () => {
  it('creates, completes the oldest, deletes finished pods first', () => {
    const plan = planScenario(
      scenario([
        { at: 0, create: 3, group: 'job' },
        { at: 10, complete: 2 },
        { at: 20, delete: 2 },
      ]),
      ['a'],
    );
    expect(plan.actions.map((a) => `${a.atMs} ${a.kind} ${a.pod}`)).to.deep.equal([
      '0 create job-0-1',
      '0 create job-0-2',
      '0 create job-0-3',
      '10000 complete job-0-1',
      '10000 complete job-0-2',
      '20000 delete job-0-1',
      '20000 delete job-0-2',
    ]);
    expect(plan.totals).to.deep.equal({ create: 3, complete: 2, delete: 2 });
  });

  it('spreads actions over time, targets node indexes, expands "all" at its time', () => {
    expect(spreadTimes(1, 2, 4)).to.deep.equal([1000, 1500, 2000, 2500]);
    const plan = planScenario(
      scenario([
        { at: 0, create: 2, over: 1, nodes: [1, 5] },
        { at: 0, create: 1 },
        { at: 2, delete: 'all', group: 'app', over: 4 },
        { at: 3, delete: 5 },
      ]),
      ['a', 'b'],
    );
    expect(plan.actions.map((a) => `${a.atMs} ${a.kind} ${a.node} ${a.pod}`)).to.deep.equal([
      '0 create b app-1-1',
      '0 create a app-0-1',
      '0 create b app-1-2',
      '500 create b app-1-3',
      '2000 delete a app-0-1',
      '2000 delete b app-1-1',
      // "delete 5" at 3 s takes what the sweep had not reached yet.
      '3000 delete b app-1-2',
      '3000 delete b app-1-3',
    ]);
    // Node a: five deletes found nothing; node b: three, and two sweep slots came too late.
    expect(plan.skipped).to.equal(10);
  });

  it('is deterministic, never acts on a pod twice wrongly, and demand stays non-negative', () => {
    const step = fc.record({
      at: fc.integer({ min: 0, max: 50 }),
      kind: fc.constantFrom('create', 'complete', 'delete'),
      count: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.constant('all')),
      over: fc.integer({ min: 0, max: 5 }),
      group: fc.constantFrom(undefined, 'a', 'b'),
    });
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 3 }),
        (raw, n) => {
          const steps = raw.map((s) => ({
            at: s.at,
            [s.kind]: s.kind === 'create' && s.count === 'all' ? 3 : s.count,
            over: s.over,
            ...(s.group ? { group: s.group } : {}),
          }));
          const sc = scenario(steps);
          const nodes = Array.from({ length: n }, (_, i) => `n${i}`);
          const plan = planScenario(sc, nodes);
          expect(planScenario(sc, nodes)).to.deep.equal(plan);
          const state = new Map<string, string>();
          let last = 0;
          for (const a of plan.actions) {
            expect(a.atMs).to.be.at.least(last);
            last = a.atMs;
            const s = state.get(a.pod);
            if (a.kind === 'create') expect(s).to.equal(undefined);
            if (a.kind === 'complete') expect(s).to.equal('create');
            if (a.kind === 'delete') expect(s).to.be.oneOf(['create', 'complete']);
            state.set(a.pod, a.kind);
          }
          for (const d of plannedDemand(plan, n)) expect(d).to.be.at.least(0);
        },
      ),
    );
  });

  it('plans 1,000 nodes', () => {
    const nodes = Array.from({ length: 1000 }, (_, i) => `node-${i}`);
    const plan = planScenario(scenario([{ at: 0, create: 30, over: 10 }]), nodes);
    expect(plan.actions).to.have.length(30_000);
    expect(() => planScenario(scenario([{ at: 0, create: 1 }]), [])).to.throw(RangeError);
  });
});
