// The leader election loop with injected time: two electors share one
// in-memory Lease (resourceVersion conflicts as the API server has them);
// time moves only when the test says. Covers acquisition, a standby that
// never writes, takeover after a crash within the lease duration, a holder
// whose renewals fail stopping before its lease can expire, a hung request,
// release on stop and the one-winner race.
import { expect } from 'chai';
import type { LeaseApi } from '../../src/leader/elector.ts';
import { LeaderElector } from '../../src/leader/elector.ts';
import type { LeaseRecord, LeaseState } from '../../src/leader/lease.ts';
import { CLIENT_GO_TIMINGS } from '../../src/leader/lease.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { FakeClock } from '../fulfiller/fake-clock.ts';

class Conflict extends Error {
  readonly code = 409;
}

/** One Lease on a fake server; each client sees it through `client(id)`. */
class FakeLeaseServer {
  state: LeaseState | undefined;
  private rv = 0;
  readonly writes: Array<{ by: string; at: number; holder: string }> = [];
  /** Clients whose writes fail with 500 (their reads still work). */
  readonly failing = new Set<string>();
  /** Clients whose every request never answers. */
  readonly hanging = new Set<string>();
  /** Watchers told of every write (as a Lease watch would). */
  readonly watchers: Array<(state: LeaseState) => void> = [];
  private readonly clock: FakeClock;
  constructor(clock: FakeClock) {
    this.clock = clock;
  }

  client(id: string): LeaseApi {
    const hang = <T>(): Promise<T> => new Promise<T>(() => {});
    const write = (record: LeaseRecord): LeaseState => {
      if (this.failing.has(id)) throw Object.assign(new Error('injected 500'), { code: 500 });
      this.state = { record: { ...record }, resourceVersion: String(++this.rv) };
      this.writes.push({ by: id, at: this.clock.now(), holder: record.holderIdentity });
      const state = this.state;
      for (const w of this.watchers) queueMicrotask(() => w(structuredClone(state)));
      return structuredClone(this.state);
    };
    return {
      get: async () => (this.hanging.has(id) ? hang() : structuredClone(this.state)),
      create: async (record) => {
        if (this.hanging.has(id)) return hang();
        if (this.state) throw new Conflict('exists');
        return write(record);
      },
      update: async (record, rv) => {
        if (this.hanging.has(id)) return hang();
        if (!this.state || this.state.resourceVersion !== rv) throw new Conflict('conflict');
        return write(record);
      },
    };
  }
}

interface Candidate {
  elector: LeaderElector;
  /** [time, leading] each time leadership changed. */
  changes: Array<[number, boolean]>;
}

function candidate(server: FakeLeaseServer, clock: FakeClock, id: string, random = 0.5): Candidate {
  const changes: Candidate['changes'] = [];
  const elector = new LeaderElector({
    identity: id,
    api: server.client(id),
    timings: CLIENT_GO_TIMINGS,
    clock,
    logger: silentLogger(),
    random: () => random,
    onStartedLeading: () => changes.push([clock.now(), true]),
    onStoppedLeading: () => {
      changes.push([clock.now(), false]);
    },
  });
  return { elector, changes };
}

describe('leader/elector: the loop with injected time', () => {
  let clock: FakeClock;
  let server: FakeLeaseServer;
  beforeEach(() => {
    clock = new FakeClock();
    server = new FakeLeaseServer(clock);
  });

  it('the first creates the lease and leads; the standby never writes while it renews every 2 s', async () => {
    const a = candidate(server, clock, 'a');
    const b = candidate(server, clock, 'b');
    a.elector.start();
    await clock.advance(10);
    b.elector.start();
    await clock.advance(60_000);
    expect(a.elector.leading).to.equal(true);
    expect(a.elector.canWrite()).to.equal(true);
    expect(b.elector.leading).to.equal(false);
    expect(b.elector.canWrite()).to.equal(false);
    expect(server.writes.filter((w) => w.by === 'b')).to.deep.equal([]);
    const renewals = server.writes.filter((w) => w.by === 'a');
    expect(renewals.length).to.be.within(30, 31);
    for (let i = 1; i < renewals.length; i++)
      expect(renewals[i]!.at - renewals[i - 1]!.at).to.equal(2_000);
    expect(server.state?.record.holderIdentity).to.equal('a');
    expect(b.elector.holder).to.equal('a');
  });

  it('after the holder dies, the standby takes over once the lease duration has passed unchanged', async () => {
    const a = candidate(server, clock, 'a');
    const b = candidate(server, clock, 'b', 0);
    a.elector.start();
    await clock.advance(10);
    b.elector.start();
    await clock.advance(5_000);
    server.hanging.add('a'); // kill -9: nothing more from a
    const lastRenewal = server.writes.at(-1)!.at;
    await clock.advance(30_000);
    const [takenAt] = b.changes.find(([, on]) => on)!;
    expect(takenAt - lastRenewal).to.be.at.least(15_000);
    // b polls every 2 s (jitter 0 here): it sees the last change within one period.
    expect(takenAt - lastRenewal).to.be.at.most(15_000 + 2 * 2_000);
    expect(server.state?.record).to.include({ holderIdentity: 'b', leaseTransitions: 1 });
    // a, hung, stepped down at its renew deadline, before b could take over.
    const [aStopped] = a.changes.find(([, on]) => !on)!;
    expect(aStopped).to.be.at.most(lastRenewal + 10_000);
    expect(aStopped).to.be.below(takenAt);
  });

  it('a standby told of each renewal by a watch takes over one lease duration after the last one', async () => {
    const a = candidate(server, clock, 'a');
    const b = candidate(server, clock, 'b', 0.99);
    server.watchers.push((state) => b.elector.seen(state));
    a.elector.start();
    await clock.advance(10);
    b.elector.start();
    await clock.advance(6_000);
    server.hanging.add('a'); // kill -9
    const killedAt = clock.now();
    const lastRenewal = server.writes.at(-1)!.at;
    await clock.advance(30_000);
    const [takenAt] = b.changes.find(([, on]) => on)!;
    // Without the watch it would have seen the last renewal up to 4.4 s late.
    expect(takenAt - lastRenewal).to.be.within(15_000, 15_001);
    expect(takenAt - killedAt).to.be.at.most(15_001);
    expect(a.changes.at(-1)).to.deep.equal([lastRenewal + 10_000, false]);
  });

  it('a holder whose renewals fail stops writing at its renew deadline, before the lease expires', async () => {
    const a = candidate(server, clock, 'a');
    const b = candidate(server, clock, 'b');
    a.elector.start();
    await clock.advance(10);
    b.elector.start();
    await clock.advance(3_000);
    server.failing.add('a');
    server.failing.add('b'); // the API refuses Lease writes from everyone
    const lastRenewal = server.writes.at(-1)!.at;
    for (let t = clock.now(); t < lastRenewal + 30_000; t += 100) {
      await clock.advance(100);
      if (clock.now() < lastRenewal + 10_000)
        expect(a.elector.canWrite(), `at +${clock.now() - lastRenewal}`).to.equal(true);
      else expect(a.elector.canWrite(), `at +${clock.now() - lastRenewal}`).to.equal(false);
    }
    const [stoppedAt] = a.changes.find(([, on]) => !on)!;
    expect(stoppedAt).to.equal(lastRenewal + 10_000);
    expect(stoppedAt).to.be.below(lastRenewal + 15_000);
    expect(b.elector.leading).to.equal(false);
    // The API heals: one of them leads again.
    server.failing.clear();
    await clock.advance(20_000);
    expect([a.elector.leading, b.elector.leading].filter(Boolean)).to.have.length(1);
  });

  it('a renewal that hangs still demotes the holder at its deadline', async () => {
    const a = candidate(server, clock, 'a');
    a.elector.start();
    await clock.advance(4_100);
    const lastRenewal = server.writes.at(-1)!.at;
    server.hanging.add('a');
    await clock.advance(12_000);
    expect(a.elector.leading).to.equal(false);
    expect(a.changes.at(-1)).to.deep.equal([lastRenewal + 10_000, false]);
  });

  it('stop() steps down first, then releases: the standby takes over at its next attempt', async () => {
    const a = candidate(server, clock, 'a');
    const b = candidate(server, clock, 'b', 0);
    a.elector.start();
    await clock.advance(10);
    b.elector.start();
    await clock.advance(7_000);
    const stopping = a.elector.stop(true);
    await clock.advance(0);
    await stopping;
    expect(a.changes.at(-1)?.[1]).to.equal(false);
    expect(server.state?.record).to.include({ holderIdentity: '', leaseDurationSeconds: 1 });
    const releasedAt = clock.now();
    await clock.advance(3_000);
    const [takenAt] = b.changes.find(([, on]) => on)!;
    expect(takenAt - releasedAt).to.be.at.most(2_000);
    // nudge(): a watch saw the release, the standby does not wait for its period.
    const c = candidate(server, clock, 'c', 0);
    c.elector.start();
    await clock.advance(100);
    await b.elector.stop(true);
    c.elector.nudge();
    await clock.advance(1);
    expect(c.elector.leading).to.equal(true);
  });

  it('two candidates racing for a missing lease: exactly one wins', async () => {
    const a = candidate(server, clock, 'a');
    const b = candidate(server, clock, 'b');
    a.elector.start();
    b.elector.start();
    await clock.advance(30_000);
    expect([a.elector.leading, b.elector.leading].filter(Boolean)).to.have.length(1);
    expect(
      server.writes.filter((w) => w.by !== server.state?.record.holderIdentity),
    ).to.have.length(0);
  });
});
