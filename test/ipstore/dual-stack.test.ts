// The store in a dual-stack pool (docs/design/contracts.md, "Address
// families"): one dynamic container per family; a pod gets one address of
// each family or none; release and reclaim free both; marking keeps the
// families in step; a container whose fields are of two families is
// refused. Against the real SQLite store, in memory.
import { expect } from 'chai';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { openIpStore, type SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import {
  DesiredIpUnavailableError,
  InsufficientReleasableError,
  InvalidIpStoreInputError,
  NoAvailableIpError,
} from '../../src/ipstore/types.ts';
import { container, container6, ip6, ipId, ipId6, pod, tickingClock } from './helpers.ts';

const HOSTS = [2, 3, 4, 5];

describe('ipstore: dual-stack pool', () => {
  let store: SqliteIpStore;
  beforeEach(() => {
    store = openIpStore({ memory: true, now: tickingClock() });
    store.syncInventory([container6(1, HOSTS), container(1, HOSTS)]);
  });
  afterEach(() => store.close());

  it('assigns one address of each family, IPv4 first, each of its own container', () => {
    const got = store.assign(pod(1));
    expect(got.ips.map((r) => [r.ip, r.ncId])).to.deep.equal([
      ['10.1.0.2', 'nc-1'],
      [ip6(1, 2), 'nc6-1'],
    ]);
    // The record's own fields are the first address's (a single-stack caller reads them).
    expect(got).to.include({ ip: '10.1.0.2', state: 'Assigned' });
    expect(store.container('nc6-1')).to.deep.include({
      family: 6,
      defaultGateway: 'fd00:1::fffe',
    });
    // The same interface again: the same two.
    expect(store.assign(pod(1)).ips.map((r) => r.id)).to.deep.equal([ipId(1, 2), ipId6(1, 2)]);
    expect(store.list(['Assigned']).map((r) => r.pod?.podInterfaceID)).to.deep.equal([
      'pod-1-eth0',
      'pod-1-eth0',
    ]);
    expect(store.countsByFamily()).to.deep.equal([
      {
        family: 4,
        counts: { Available: 3, Assigned: 1, PendingRelease: 0, PendingProgramming: 0 },
      },
      {
        family: 6,
        counts: { Available: 3, Assigned: 1, PendingRelease: 0, PendingProgramming: 0 },
      },
    ]);
    expect(checkStoreInvariants(store)).to.deep.equal([]);
  });

  it('assigns nothing when the IPv6 family has no Available address, and says which', () => {
    store.syncInventory([container6(1, [2]), container(1, HOSTS)]);
    store.assign(pod(1));
    const before = store.list();
    let error: unknown;
    try {
      store.assign(pod(2));
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(NoAvailableIpError);
    expect((error as Error).message).to.equal(
      'no Available IPv6 address to assign (1 IPv4 Assigned, 3 IPv4 Available, 1 IPv6 Assigned): neither family assigned',
    );
    expect(store.list()).to.deep.equal(before);
  });

  it('assigns nothing while a family has a container but no address yet', () => {
    store.syncInventory([container6(1, []), container(1, HOSTS)]);
    expect(() => store.assign(pod(1))).to.throw(NoAvailableIpError, /no Available IPv6 address/);
    expect(store.list(['Assigned'])).to.deep.equal([]);
  });

  it('releases both addresses, and once only', () => {
    const got = store.assign(pod(1));
    const released = store.release('pod-1-eth0');
    expect(released?.ips.map((r) => [r.id, r.state])).to.deep.equal([
      [ipId(1, 2), 'Available'],
      [ipId6(1, 2), 'Available'],
    ]);
    expect(released?.ips.map((r) => r.ip)).to.deep.equal(got.ips.map((r) => r.ip));
    expect(store.release('pod-1-eth0')).to.equal(undefined);
    expect(store.counts().Assigned).to.equal(0);
  });

  it('reclaims both addresses of an assignment named by either one', () => {
    const got = store.assign(pod(1));
    const holder = { podInterfaceID: 'pod-1-eth0', infraContainerID: 'infra-1' };
    const freed = store.reclaim(ipId6(1, 2), holder);
    expect(freed?.ips.map((r) => r.id)).to.deep.equal(got.ips.map((r) => r.id));
    expect(store.reclaim(ipId(1, 2), holder)).to.equal(undefined);
    expect(store.counts().Assigned).to.equal(0);
  });

  it("a recreated sandbox's request releases both of the older sandbox's addresses", () => {
    store.assign(pod(1));
    const again = store.assign({
      ...pod(1),
      podInterfaceID: 'pod-1-eth0-new',
      infraContainerID: 'x',
    });
    expect(again.replaced?.map((r) => r.id)).to.deep.equal([ipId(1, 2), ipId6(1, 2)]);
    expect(again.ips).to.have.length(2);
  });

  it('takes a desired address in its family and any free one of the other', () => {
    const got = store.assign(pod(1, [ip6(1, 4)]));
    expect(got.ips.map((r) => r.ip)).to.deep.equal(['10.1.0.2', ip6(1, 4)]);
    expect(() => store.assign(pod(2, ['10.9.9.9']))).to.throw(
      DesiredIpUnavailableError,
      /10\.9\.9\.9 is not in the pool/,
    );
  });

  it('refuses a desired address of a family the pool does not have, changing nothing', () => {
    store.syncInventory([container(1, HOSTS)]);
    const before = store.list();
    expect(() => store.assign(pod(1, [ip6(1, 3)]))).to.throw(
      DesiredIpUnavailableError,
      /fd00:1::3 not in the pool \(it has IPv4\)/,
    );
    expect(store.list()).to.deep.equal(before);
  });

  it('marks the same number of each family in a level pool, each address under its own id', () => {
    store.assign(pod(1));
    expect(store.poolView()).to.deep.equal({
      pendingReleaseIds: [],
      activeCount: 4,
      markableCount: 3,
    });
    const marked = store.markPendingRelease(2);
    expect(marked).to.have.length(4);
    expect(marked.filter((id) => id.startsWith('ip6-'))).to.have.length(2);
    expect(store.poolView()).to.deep.include({ activeCount: 2, markableCount: 1 });
    expect(() => store.markPendingRelease(2)).to.throw(InsufficientReleasableError);
    expect(store.pendingReleaseIds()).to.deep.equal([...marked].sort());
  });

  it('gives back only what a lagging family holds above the other', () => {
    // IPv6's subnet ran dry at 2 addresses, both in use; IPv4 holds 4.
    store.syncInventory([container6(1, [2, 3]), container(1, HOSTS)]);
    store.assign(pod(1));
    store.assign(pod(2));
    expect(store.poolView()).to.deep.include({ activeCount: 4, markableCount: 2 });
    // Down to 2 pods' worth: the two free IPv4 addresses go, no IPv6 one.
    expect(store.markPendingRelease(2)).to.deep.equal([ipId(1, 4), ipId(1, 5)]);
    expect(store.countsByFamily().map((f) => f.counts.PendingRelease)).to.deep.equal([2, 0]);
  });

  it('refuses a container whose fields are of two families, changing nothing', () => {
    const before = store.list();
    const bad = container6(1, HOSTS, { defaultGateway: '10.1.0.254' });
    let error: unknown;
    try {
      store.syncInventory([bad, container(1, HOSTS)]);
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(InvalidIpStoreInputError);
    expect((error as InvalidIpStoreInputError).field).to.equal(
      'networkContainers[0].defaultGateway',
    );
    expect((error as Error).message).to.match(
      /defaultGateway 10\.1\.0\.254 is IPv4, the container is IPv6/,
    );
    const mixed = container(1, HOSTS);
    mixed.ipAssignments!.push({ name: 'stray', ip: 'fd00:1::99' });
    expect(() => store.syncInventory([mixed])).to.throw(
      InvalidIpStoreInputError,
      /ipAssignments\[4\]\.ip fd00:1::99 is IPv6, the container is IPv4/,
    );
    expect(store.list()).to.deep.equal(before);
  });

  it('serves an IPv6-only pool with its one family', () => {
    store.syncInventory([container6(1, HOSTS)]);
    const got = store.assign(pod(1));
    expect(got.ips.map((r) => r.ip)).to.deep.equal([ip6(1, 2)]);
    expect(store.countsByFamily().map((f) => f.family)).to.deep.equal([6]);
    expect(store.markPendingRelease(1)).to.have.length(1);
  });

  it('a pod that got IPv4 only before the pool became dual-stack keeps what it has', () => {
    store.syncInventory([container(1, HOSTS)]);
    const before = store.assign(pod(1));
    store.syncInventory([container(1, HOSTS), container6(1, HOSTS)]);
    expect(store.assign(pod(1)).ips.map((r) => r.ip)).to.deep.equal(before.ips.map((r) => r.ip));
    expect(store.assign(pod(2)).ips).to.have.length(2);
    expect(checkStoreInvariants(store)).to.deep.equal([]);
  });
});
