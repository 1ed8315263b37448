import { expect } from 'chai';
import { buildDebugPool } from '../../src/nodeapi/debug-pool.ts';

const counts = { Available: 1, Assigned: 2, PendingRelease: 0, PendingProgramming: 0 };

describe('nodeapi/debug-pool: the idle account after a restart', () => {
  it('shows the resumed account (when and how often), the delays simulated, and not the stored form', () => {
    const doc = buildDebugPool(
      {
        ready: true,
        writes: 3,
        damping: {
          policy: 'auto',
          target: 16,
          applied: 16,
          request: 16,
          heldBack: 0,
          account: {
            budget: 1.5,
            since: Date.UTC(2026, 0, 1),
            cnsV2Writes: 10,
            following: 300,
            delays: [
              {
                seconds: 300,
                idleRatio: 1.2,
                windowIdleRatio: 1.1,
                writes: 2,
                churn: 32,
                fits: true,
              },
            ],
            resumed: { from: Date.UTC(2026, 0, 2), times: 2 },
            carry: { version: 1, held: 5 },
          },
        },
      },
      counts,
    );
    const a = doc.releasePolicy?.account as Record<string, unknown>;
    expect(a).to.not.have.property('carry');
    expect(a).to.deep.include({
      since: '2026-01-01T00:00:00.000Z',
      following: 300,
      resumed: { from: '2026-01-02T00:00:00.000Z', times: 2 },
      writes: 3,
      writesSaved: 7,
    });
  });
});
