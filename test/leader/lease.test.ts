// The pure leader-election decisions, as a table: what a replica does after
// reading the Lease, with client-go's 15 s / 10 s / 2 s timings.
import { expect } from 'chai';
import type { Decision, LeaseRecord, LeaseState, Observation } from '../../src/leader/lease.ts';
import {
  CLIENT_GO_TIMINGS,
  decide,
  microTime,
  observe,
  released,
  validateTimings,
} from '../../src/leader/lease.ts';

const T0 = Date.parse('2025-01-01T00:00:00Z');
const rec = (holder: string, extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: holder,
  leaseDurationSeconds: 15,
  acquireTime: microTime(T0 - 60_000),
  renewTime: microTime(T0 - 1_000),
  leaseTransitions: 3,
  ...extra,
});
const state = (r: LeaseRecord, rv = '7'): LeaseState => ({ record: r, resourceVersion: rv });
const seen = (r: LeaseRecord, at: number): Observation => ({
  record: r,
  resourceVersion: '7',
  observedAt: at,
});

interface Row {
  name: string;
  current: LeaseState | undefined;
  observation: Observation | undefined;
  now: number;
  expect: {
    kind: Decision['kind'];
    holder?: string;
    expiresAt?: number;
    resourceVersion?: string;
    record?: Partial<LeaseRecord>;
  };
}

const rows: Row[] = [
  {
    name: 'no lease: create it, holding it, 0 transitions',
    current: undefined,
    observation: undefined,
    now: T0,
    expect: {
      kind: 'create',
      record: {
        holderIdentity: 'me',
        leaseDurationSeconds: 15,
        leaseTransitions: 0,
        acquireTime: microTime(T0),
        renewTime: microTime(T0),
      },
    },
  },
  {
    name: "another holder's record first seen now: wait the whole lease duration",
    current: state(rec('other')),
    observation: seen(rec('other'), T0),
    now: T0,
    expect: { kind: 'held', holder: 'other', expiresAt: T0 + 15_000 },
  },
  {
    name: 'unchanged for 14.999 s: still held (our own clock, not its renewTime)',
    current: state(rec('other', { renewTime: microTime(T0 - 3_600_000) })),
    observation: seen(rec('other', { renewTime: microTime(T0 - 3_600_000) }), T0),
    now: T0 + 14_999,
    expect: { kind: 'held', holder: 'other' },
  },
  {
    name: 'unchanged for 15 s: take it over, one more transition, new acquireTime',
    current: state(rec('other')),
    observation: seen(rec('other'), T0),
    now: T0 + 15_000,
    expect: {
      kind: 'update',
      resourceVersion: '7',
      record: {
        holderIdentity: 'me',
        leaseTransitions: 4,
        acquireTime: microTime(T0 + 15_000),
        renewTime: microTime(T0 + 15_000),
      },
    },
  },
  {
    name: 'released (empty holder): take it at once',
    current: state(released(rec('other'), T0)),
    observation: seen(released(rec('other'), T0), T0),
    now: T0,
    expect: { kind: 'update', record: { holderIdentity: 'me', leaseTransitions: 4 } },
  },
  {
    name: 'held by me: renew, keeping acquireTime and transitions',
    current: state(rec('me')),
    observation: seen(rec('me'), T0 - 2_000),
    now: T0,
    expect: {
      kind: 'update',
      record: {
        holderIdentity: 'me',
        acquireTime: microTime(T0 - 60_000),
        renewTime: microTime(T0),
        leaseTransitions: 3,
      },
    },
  },
  {
    name: "the record's own duration counts (a 1 s record expires after 1 s)",
    current: state(rec('other', { leaseDurationSeconds: 1 })),
    observation: seen(rec('other', { leaseDurationSeconds: 1 }), T0),
    now: T0 + 1_000,
    expect: { kind: 'update', record: { holderIdentity: 'me' } },
  },
];

describe('leader/lease: decisions (client-go semantics)', () => {
  for (const row of rows) {
    it(row.name, () => {
      const d = decide('me', row.current, row.observation, row.now, CLIENT_GO_TIMINGS);
      const { record, ...rest } = row.expect;
      expect(d).to.include(rest);
      if (record) expect((d as { record: LeaseRecord }).record).to.include(record);
    });
  }

  it('the observation clock restarts only when the record changes', () => {
    const a = observe(undefined, state(rec('other')), T0);
    const same = observe(a, state(rec('other'), '8'), T0 + 5_000);
    expect(same.observedAt).to.equal(T0);
    expect(same.resourceVersion).to.equal('8');
    const renewed = observe(
      same,
      state(rec('other', { renewTime: microTime(T0 + 4_000) })),
      T0 + 6_000,
    );
    expect(renewed.observedAt).to.equal(T0 + 6_000);
  });

  it('a release leaves no holder, a 1 s duration and the transition count', () => {
    expect(released(rec('me'), T0)).to.deep.equal({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: microTime(T0),
      renewTime: microTime(T0),
      leaseTransitions: 3,
    });
  });

  it('MicroTime has six fractional digits, as Kubernetes parses it', () => {
    expect(microTime(Date.parse('2025-01-02T03:04:05.678Z'))).to.equal(
      '2025-01-02T03:04:05.678000Z',
    );
  });

  it('timings must leave the holder time to stop before the lease expires', () => {
    expect(() => validateTimings(CLIENT_GO_TIMINGS)).to.not.throw();
    expect(() =>
      validateTimings({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }),
    ).to.throw(/lease duration must be greater than the renew deadline/);
    expect(() =>
      validateTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }),
    ).to.throw(/renew deadline must be greater than 1.2/);
    expect(() =>
      validateTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 0 }),
    ).to.throw(/retryPeriodMs must be a positive duration/);
  });
});
