// The store's operations that follow the pods: a recreated sandbox releases
// the pod's older assignment in the same transaction, reclaim releases only
// while the holder the caller saw still holds the IP, and adopt assigns an
// address a pod reports, never one another pod holds.
import { expect } from 'chai';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { openIpStore, type SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import {
  ADOPTED_SANDBOX,
  InvalidIpStoreInputError,
  isAdopted,
  NoAvailableIpError,
  type AssignRequest,
} from '../../src/ipstore/types.ts';
import { container, ipId, tickingClock } from './helpers.ts';

const sandbox = (name: string, n: number, ns = 'default'): AssignRequest => ({
  podInterfaceID: `${name}-${n}-eth0`,
  infraContainerID: `${name}-${n}`,
  podName: name,
  podNamespace: ns,
});

describe('ipstore: operations that follow the pods', () => {
  let store: SqliteIpStore;
  beforeEach(() => {
    store = openIpStore({ memory: true, now: tickingClock() });
    store.syncInventory([container(1, [2, 3, 4])]);
  });
  afterEach(() => {
    expect(checkStoreInvariants(store)).to.deep.equal([]);
    store.close();
  });

  describe('assign: a recreated sandbox', () => {
    it('releases the older assignment of the same pod in the same transaction; the new one is kept', () => {
      const first = store.assign(sandbox('web', 1));
      expect(first.replaced).to.equal(undefined);
      const second = store.assign(sandbox('web', 2));
      expect(second.ip).to.not.equal(first.ip);
      expect(second.replaced?.map((r) => [r.ip, r.pod?.infraContainerID])).to.deep.equal([
        [first.ip, 'web-1'],
      ]);
      const assigned = store.list(['Assigned']);
      expect(assigned.map((r) => r.pod?.infraContainerID)).to.deep.equal(['web-2']);
      // The same request again is idempotent and releases nothing.
      expect(store.assign(sandbox('web', 2))).to.deep.include({ ip: second.ip });
      expect(store.assign(sandbox('web', 2)).replaced).to.equal(undefined);
    });

    it('leaves other pods, and other interfaces of the same sandbox, alone', () => {
      store.syncInventory([container(1, [2, 3, 4, 5])]);
      const web = store.assign(sandbox('web', 1));
      const net1 = store.assign({ ...sandbox('web', 1), podInterfaceID: 'web-1-net1' });
      const other = store.assign({ ...sandbox('web', 2, 'other-ns'), podInterfaceID: 'o-eth0' });
      const db = store.assign(sandbox('db', 1));
      for (const r of [web, net1, other, db]) expect(r.replaced).to.equal(undefined);
      expect(store.counts().Assigned).to.equal(4);
    });

    it('releases the older assignment even when the new sandbox gets no IP', () => {
      store.assign(sandbox('a', 1));
      store.assign(sandbox('b', 1));
      const old = store.assign(sandbox('web', 1));
      store.syncInventory([container(1, [2, 3])]); // web's IP vanished from the status
      expect(store.list(['Assigned']).filter((r) => r.vanished)).to.have.length(1);
      let error: unknown;
      try {
        store.assign(sandbox('web', 2));
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(NoAvailableIpError);
      expect((error as NoAvailableIpError).replaced?.map((r) => r.ip)).to.deep.equal([old.ip]);
      // The vanished IP only the dead sandbox kept is gone from the store.
      expect(store.list().map((r) => r.ip)).to.not.include(old.ip);
    });

    it('a request without a pod name releases nothing', () => {
      store.assign({ ...sandbox('x', 1), podName: '', podNamespace: '' });
      expect(store.assign({ ...sandbox('x', 2), podName: '', podNamespace: '' }).replaced).to.equal(
        undefined,
      );
      expect(store.counts().Assigned).to.equal(2);
    });
  });

  describe('reclaim', () => {
    it('releases only while the given holder holds the IP', () => {
      const r = store.assign(sandbox('web', 1));
      const holder = { podInterfaceID: 'web-1-eth0', infraContainerID: 'web-1' };
      expect(store.reclaim(r.id, { ...holder, infraContainerID: 'web-0' })).to.equal(undefined);
      expect(store.reclaim(r.id, holder)).to.deep.include({ id: r.id, state: 'Available' });
      expect(store.reclaim(r.id, holder)).to.equal(undefined);
      // Handed to someone else meanwhile: a reclaim decided on the old view changes nothing.
      const again = store.assign({ ...sandbox('db', 1), desiredIPAddresses: [r.ip] });
      expect(store.reclaim(r.id, holder)).to.equal(undefined);
      expect(store.list(['Assigned']).map((x) => x.id)).to.deep.equal([again.id]);
    });

    it('refuses bad input and changes nothing', () => {
      expect(() => store.reclaim('', { podInterfaceID: 'a', infraContainerID: 'b' })).to.throw(
        InvalidIpStoreInputError,
      );
      expect(() =>
        store.reclaim(ipId(1, 2), { podInterfaceID: 'a' } as unknown as {
          podInterfaceID: string;
          infraContainerID: string;
        }),
      ).to.throw(InvalidIpStoreInputError);
    });
  });

  describe('adopt', () => {
    it('assigns an Available, PendingRelease or PendingProgramming address to the pod that reports it', () => {
      store.syncInventory([container(1, [2, 3, 4, 5])], { newIpState: 'PendingProgramming' });
      store.markPendingRelease(1); // takes .5, the PendingProgramming one
      store.markProgrammed();
      const pending = store.pendingReleaseIds();
      expect(pending).to.deep.equal([ipId(1, 5)]);
      for (const [host, from] of [
        [2, 'Available'],
        [5, 'PendingRelease'],
      ] as const) {
        const result = store.adopt({
          ip: `10.1.0.${host}`,
          podName: `p${host}`,
          podNamespace: 'd',
        });
        expect(result.outcome).to.equal('adopted');
        if (result.outcome !== 'adopted') return;
        expect(result.previous.state).to.equal(from);
        expect(result.record.state).to.equal('Assigned');
        expect(result.record.pod?.infraContainerID).to.equal(ADOPTED_SANDBOX);
        expect(isAdopted(result.record.pod)).to.equal(true);
      }
      expect(store.pendingReleaseIds()).to.deep.equal([]);
    });

    it('is idempotent for the same pod; another holder is a conflict unless it is the expected one', () => {
      const r = store.assign(sandbox('old', 1));
      expect(store.adopt({ ip: r.ip, podName: 'old', podNamespace: 'default' }).outcome).to.equal(
        'held',
      );
      expect(store.adopt({ ip: r.ip, podName: 'new', podNamespace: 'default' }).outcome).to.equal(
        'conflict',
      );
      const taken = store.adopt({
        ip: r.ip,
        podName: 'new',
        podNamespace: 'default',
        from: { podInterfaceID: 'old-1-eth0', infraContainerID: 'old-1' },
      });
      expect(taken.outcome).to.equal('adopted');
      expect(store.list(['Assigned']).map((x) => x.pod?.podName)).to.deep.equal(['new']);
    });

    it('an address the store does not hold is unknown; bad input is refused', () => {
      expect(store.adopt({ ip: '10.9.9.9', podName: 'p', podNamespace: 'd' })).to.deep.equal({
        outcome: 'unknown',
      });
      expect(() => store.adopt({ ip: 'nope', podName: 'p', podNamespace: 'd' })).to.throw(
        InvalidIpStoreInputError,
      );
      expect(() => store.adopt({ ip: '10.1.0.2', podName: '', podNamespace: 'd' })).to.throw(
        InvalidIpStoreInputError,
      );
      expect(store.counts().Assigned).to.equal(0);
    });

    it('a later CNI request of the adopting pod under a real sandbox replaces the adopted assignment', () => {
      store.adopt({ ip: '10.1.0.3', podName: 'web', podNamespace: 'default' });
      const next = store.assign(sandbox('web', 7));
      expect(next.replaced?.map((r) => r.ip)).to.deep.equal(['10.1.0.3']);
    });
  });
});
