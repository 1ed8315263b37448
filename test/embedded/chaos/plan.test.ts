// The chaos plan: drawn from the seed alone, so a run can be replayed, and
// always at least what the quality bar asks: every sidecar killed, the
// fulfiller leader and standby killed, five watch drops, a compaction
// followed by a drop, the standby cut off after each leader kill, all
// within the chaos window.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  CHAOS_WINDOW,
  CUT_AFTER_LEADER_KILL_MS,
  planChaos,
} from '../../../harness/embedded/chaos/plan.ts';

describe('embedded/chaos: plan', () => {
  it('is the same for the same seed and differs for another', () => {
    const input = { rate: 0.2, durationMs: 85_000, nodes: ['node-0', 'node-1', 'node-2'] };
    const a = planChaos({ ...input, seed: 7 });
    expect(planChaos({ ...input, seed: 7 })).to.deep.equal(a);
    expect(planChaos({ ...input, seed: 8 })).to.not.deep.equal(a);
  });

  it('kills every sidecar, the leader and the standby, drops and compacts, cuts the standby off, inside the window', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        fc.integer({ min: 10_000, max: 600_000 }),
        fc.integer({ min: 1, max: 32 }),
        (seed, rate, durationMs, n) => {
          const nodes = Array.from({ length: n }, (_, i) => `node-${i}`);
          const plan = planChaos({ seed, rate, durationMs, nodes });
          for (const node of nodes)
            expect(plan.some((a) => a.kind === 'kill-sidecar' && a.node === node)).to.equal(true);
          const roles = plan.flatMap((a) => (a.kind === 'kill-fulfiller' ? [a.role] : []));
          expect(roles.slice(0, 3)).to.deep.equal(['leader', 'standby', 'leader']);
          expect(plan.filter((a) => a.kind === 'drop-watches').length).to.be.at.least(5);
          // The standby is cut off at least three times, once after each leader kill.
          const cuts = plan.filter((a) => a.kind === 'cut-standby');
          expect(cuts.length).to.be.at.least(3);
          for (const k of plan.filter((a) => a.kind === 'kill-fulfiller' && a.role === 'leader'))
            expect(
              cuts.some((c) => c.atMs > k.atMs && c.atMs <= k.atMs + CUT_AFTER_LEADER_KILL_MS),
            ).to.equal(true);
          const compactions = plan.filter((a) => a.kind === 'compact');
          expect(compactions.length).to.be.at.least(1);
          for (const c of compactions)
            expect(
              plan.some((a) => a.kind === 'drop-watches' && !a.resource && a.atMs > c.atMs),
            ).to.equal(true);
          for (let i = 1; i < plan.length; i += 1)
            expect(plan[i]!.atMs).to.be.at.least(plan[i - 1]!.atMs);
          for (const a of plan) {
            expect(a.atMs).to.be.at.least(durationMs * 0.05 - 1);
            expect(a.atMs).to.be.at.most(durationMs * CHAOS_WINDOW + 1);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('plans nothing at rate 0', () => {
    expect(planChaos({ seed: 1, rate: 0, durationMs: 60_000, nodes: ['a'] })).to.deep.equal([]);
  });
});
