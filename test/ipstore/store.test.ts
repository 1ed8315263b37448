import { expect } from 'chai';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import {
  DesiredIpUnavailableError,
  InsufficientReleasableError,
  InvalidIpStoreInputError,
  NoAvailableIpError,
} from '../../src/ipstore/types.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import { asPoolIpStore } from '../../src/ipstore/pool-adapter.ts';
import { container, ipId, pod, tickingClock } from './helpers.ts';

describe('ipstore/SqliteIpStore', () => {
  let store: SqliteIpStore;
  let clock: () => number;
  let nowValue: number | undefined;

  beforeEach(() => {
    const tick = tickingClock();
    nowValue = undefined;
    clock = () => nowValue ?? tick();
    store = openIpStore({ memory: true, now: () => clock() });
  });
  afterEach(() => store.close());

  function sync(containers: NetworkContainer[]) {
    const change = store.syncInventory(containers);
    expect(checkStoreInvariants(store, { backing: containers })).to.deep.equal([]);
    return change;
  }

  describe('syncInventory', () => {
    it('adds new IPs as Available and keeps container info', () => {
      const change = sync([container(1, [2, 3, 4])]);
      expect(change.added.map((r) => r.id)).to.deep.equal([ipId(1, 2), ipId(1, 3), ipId(1, 4)]);
      expect(store.counts()).to.deep.equal({
        Available: 3,
        Assigned: 0,
        PendingRelease: 0,
        PendingProgramming: 0,
      });
      expect(store.container('nc-1')).to.deep.equal({
        id: 'nc-1',
        subnetAddressSpace: '10.1.0.0/24',
        defaultGateway: '10.1.0.254',
        primaryIP: '10.1.0.1',
        family: 4,
      });
    });

    it('adds new IPs as PendingProgramming when asked, and markProgrammed makes them Available', () => {
      store.syncInventory([container(1, [2, 3])], { newIpState: 'PendingProgramming' });
      expect(store.counts().PendingProgramming).to.equal(2);
      expect(store.markProgrammed([ipId(1, 2)])).to.deep.equal([ipId(1, 2)]);
      expect(store.markProgrammed()).to.deep.equal([ipId(1, 3)]);
      expect(store.counts().Available).to.equal(2);
    });

    it('removes IPs that left, whatever their state, except Assigned', () => {
      sync([container(1, [2, 3, 4, 5])]);
      const held = store.assign(pod(1));
      store.markPendingRelease(1);
      const change = sync([container(1, [])]);
      expect(change.removed).to.have.length(3);
      expect(change.assignedVanished.map((r) => r.id)).to.deep.equal([held.id]);
      expect(store.list()).to.have.length(1);
      expect(store.list()[0]).to.include({ id: held.id, state: 'Assigned', vanished: true });
      // reported once, not on every sync
      expect(sync([container(1, [])]).assignedVanished).to.deep.equal([]);
    });

    it('removes a vanished Assigned IP when its pod releases it', () => {
      sync([container(1, [2])]);
      store.assign(pod(1));
      sync([]);
      const released = store.release(pod(1).podInterfaceID);
      expect(released).to.include({ id: ipId(1, 2), vanished: true });
      expect(store.list()).to.deep.equal([]);
      expect(store.container('nc-1')).to.equal(undefined);
      expect(checkStoreInvariants(store, { backing: [] })).to.deep.equal([]);
    });

    it('backs a vanished Assigned IP again when it comes back', () => {
      sync([container(1, [2])]);
      store.assign(pod(1));
      sync([]);
      sync([container(1, [2])]);
      expect(store.list()[0]).to.not.have.property('vanished');
      expect(store.release(pod(1).podInterfaceID)).to.include({ state: 'Available' });
    });

    it('follows an IP that moves to another container, and an id whose address changes', () => {
      sync([container(1, [2, 3])]);
      const held = store.assign(pod(1, ['10.1.0.2']));
      const moved: NetworkContainer = {
        ...container(2, []),
        ipAssignments: [
          { name: ipId(1, 2), ip: '10.1.0.2' },
          { name: ipId(1, 3), ip: '10.1.0.9' },
        ],
      };
      const change = sync([moved]);
      expect(store.list(['Assigned'])[0]).to.include({ id: held.id, ncId: 'nc-2' });
      expect(change.removed.map((r) => r.ip)).to.deep.equal(['10.1.0.3']);
      expect(change.added.map((r) => r.ip)).to.deep.equal(['10.1.0.9']);
      expect(store.container('nc-1')).to.equal(undefined);
      // a pod's id that comes back under another address: kept, reported, the new address waits
      const renumbered: NetworkContainer = {
        ...moved,
        ipAssignments: [{ name: ipId(1, 2), ip: '10.1.0.7' }],
      };
      const next = store.syncInventory([renumbered]);
      expect(next.assignedVanished.map((r) => r.id)).to.deep.equal([held.id]);
      expect(next.conflicts?.map((c) => c.ip)).to.deep.equal(['10.1.0.7']);
    });

    it('skips static containers', () => {
      sync([container(1, [2]), container(2, [2], { assignmentMode: 'static' })]);
      expect(store.list().map((r) => r.ncId)).to.deep.equal(['nc-1']);
      expect(store.container('nc-2')).to.equal(undefined);
    });

    it('moves an address a pod holds under an id the status dropped to its new id, at once', () => {
      sync([container(1, [2])]);
      store.assign(pod(1));
      const reused: NetworkContainer = {
        ...container(1, []),
        ipAssignments: [{ name: 'new-id', ip: '10.1.0.2' }],
      };
      const change = sync([reused]);
      expect(change.conflicts).to.deep.equal([]);
      expect(change.assignedVanished).to.deep.equal([]);
      expect(store.list(['Assigned']).map((r) => r.id)).to.deep.equal(['new-id']);
      store.release(pod(1).podInterfaceID);
      expect(store.list(['Available']).map((r) => r.id)).to.deep.equal(['new-id']);
    });

    it('refuses malformed input and changes nothing', () => {
      sync([container(1, [2, 3])]);
      const before = store.list();
      const bad: unknown[] = [
        'nope',
        [{ id: '' }],
        [container(1, [2]), container(1, [3])],
        [{ ...container(1, []), ipAssignments: [{ name: 'a', ip: '10.0.0.300' }] }],
        [
          {
            ...container(1, []),
            ipAssignments: [
              { name: 'a', ip: '10.0.0.1' },
              { name: 'a', ip: '10.0.0.2' },
            ],
          },
        ],
        [
          container(1, [4]),
          { ...container(2, []), ipAssignments: [{ name: 'b', ip: '10.1.0.4' }] },
        ],
        [{ ...container(1, []), ipAssignments: 'x' }],
      ];
      for (const input of bad) {
        expect(
          () => store.syncInventory(input as NetworkContainer[]),
          JSON.stringify(input),
        ).to.throw(InvalidIpStoreInputError);
      }
      expect(() => store.syncInventory([], { newIpState: 'Assigned' as 'Available' })).to.throw(
        InvalidIpStoreInputError,
      );
      expect(store.list()).to.deep.equal(before);
    });

    it('rolls back every change when the transaction fails half way', () => {
      sync([container(1, [2, 3])]);
      const before = store.list();
      nowValue = 1.5; // a REAL in an INTEGER column: the insert fails after deletes and upserts
      expect(() =>
        store.syncInventory([container(1, [3, 4], { defaultGateway: '10.1.0.253' })]),
      ).to.throw();
      nowValue = undefined;
      expect(store.list()).to.deep.equal(before);
      expect(store.container('nc-1')?.defaultGateway).to.equal('10.1.0.254');
    });
  });

  describe('assign and release', () => {
    beforeEach(() => sync([container(1, [5, 3, 4])]));

    it('hands out the lowest address first, then the least recently used', () => {
      expect(store.assign(pod(1)).ip).to.equal('10.1.0.3');
      expect(store.assign(pod(2)).ip).to.equal('10.1.0.4');
      store.release(pod(1).podInterfaceID);
      expect(store.assign(pod(3)).ip).to.equal('10.1.0.5');
      expect(store.assign(pod(4)).ip).to.equal('10.1.0.3');
    });

    it('is idempotent per pod interface', () => {
      const first = store.assign(pod(1));
      expect(store.assign(pod(1))).to.deep.equal(first);
      expect(store.assign({ ...pod(1), desiredIPAddresses: [first.ip] })).to.deep.equal(first);
      expect(store.counts().Assigned).to.equal(1);
      expect(first.pod).to.deep.equal({
        podInterfaceID: 'pod-1-eth0',
        infraContainerID: 'infra-1',
        podName: 'pod-1',
        podNamespace: 'default',
      });
    });

    it('honours desired addresses only when Available', () => {
      expect(store.assign(pod(1, ['10.1.0.4'])).ip).to.equal('10.1.0.4');
      expect(() => store.assign(pod(2, ['10.1.0.4']))).to.throw(
        DesiredIpUnavailableError,
        /10.1.0.4 is Assigned/,
      );
      expect(() => store.assign(pod(2, ['10.9.9.9']))).to.throw(
        NoAvailableIpError,
        /not in the pool/,
      );
      expect(() => store.assign({ ...pod(1), desiredIPAddresses: ['10.1.0.5'] })).to.throw(
        /already holds 10.1.0.4/,
      );
      expect(store.assign(pod(2, ['10.1.0.4', '10.1.0.5'])).ip).to.equal('10.1.0.5');
      expect(store.counts().Assigned).to.equal(2);
    });

    it('throws NoAvailableIpError when none is free, naming the counts', () => {
      store.markPendingRelease(1);
      store.assign(pod(1));
      store.assign(pod(2));
      expect(() => store.assign(pod(3))).to.throw(
        NoAvailableIpError,
        /2 Assigned, 1 PendingRelease/,
      );
    });

    it('never hands out PendingProgramming or PendingRelease IPs', () => {
      store.syncInventory([container(1, [5, 3, 4, 6])], { newIpState: 'PendingProgramming' });
      store.markPendingRelease(3);
      expect(store.counts()).to.include({ PendingRelease: 3, Available: 1 });
      expect(store.assign(pod(1)).ip).to.equal('10.1.0.3'); // the one Available left: marking took 6, 5, 4
      expect(() => store.assign(pod(2))).to.throw(NoAvailableIpError);
    });

    it('release is idempotent', () => {
      const held = store.assign(pod(1));
      expect(store.release(pod(1).podInterfaceID)).to.include({ id: held.id, state: 'Available' });
      expect(store.release(pod(1).podInterfaceID)).to.equal(undefined);
      expect(store.release('never-seen')).to.equal(undefined);
    });

    it('refuses malformed requests and changes nothing', () => {
      const before = store.list();
      for (const bad of [
        {},
        { ...pod(1), podInterfaceID: '' },
        { ...pod(1), desiredIPAddresses: ['nope'] },
        { ...pod(1), desiredIPAddresses: 'x' },
        { ...pod(1), podName: 5 },
      ]) {
        expect(() => store.assign(bad as never), JSON.stringify(bad)).to.throw(
          InvalidIpStoreInputError,
        );
      }
      expect(() => store.release('' as never)).to.throw(InvalidIpStoreInputError);
      expect(store.list()).to.deep.equal(before);
    });
  });

  describe('markPendingRelease', () => {
    it('takes PendingProgramming first, then Available, never Assigned', () => {
      sync([container(1, [2, 3, 4])]);
      store.assign(pod(1));
      store.syncInventory([container(1, [2, 3, 4, 5, 6])], { newIpState: 'PendingProgramming' });
      expect(store.markPendingRelease(2)).to.deep.equal([ipId(1, 5), ipId(1, 6)]);
      expect(store.markPendingRelease(2)).to.deep.equal([ipId(1, 3), ipId(1, 4)]);
      expect(store.pendingReleaseIds()).to.deep.equal([
        ipId(1, 3),
        ipId(1, 4),
        ipId(1, 5),
        ipId(1, 6),
      ]);
      expect(store.list(['Assigned'])).to.have.length(1);
    });

    it('is all or nothing', () => {
      sync([container(1, [2, 3, 4])]);
      store.assign(pod(1));
      const before = store.list();
      expect(() => store.markPendingRelease(3))
        .to.throw(InsufficientReleasableError)
        .with.property('releasable', 2);
      expect(store.list()).to.deep.equal(before);
      expect(store.markPendingRelease(0)).to.deep.equal([]);
    });

    it('refuses a bad count', () => {
      for (const bad of [-1, 1.5, Number.NaN, '2']) {
        expect(() => store.markPendingRelease(bad as number)).to.throw(InvalidIpStoreInputError);
      }
    });
  });

  describe('restorePendingRelease', () => {
    it('makes the PendingRelease set equal to the announced ids, keeping Assigned ones', () => {
      sync([container(1, [2, 3, 4, 5])]);
      const held = store.assign(pod(1)); // 10.1.0.2
      const stale = store.markPendingRelease(1); // a mark the spec never carried
      const result = store.restorePendingRelease([ipId(1, 3), held.id, 'gone']);
      expect(result).to.deep.equal({
        restored: [ipId(1, 3)],
        unmarked: stale.filter((id) => id !== ipId(1, 3)),
        assigned: [held.id],
        unknown: ['gone'],
      });
      expect(store.pendingReleaseIds()).to.deep.equal([ipId(1, 3)]);
      expect(store.list(['Assigned'])[0]?.id).to.equal(held.id);
    });

    it('refuses malformed ids and changes nothing', () => {
      sync([container(1, [2])]);
      expect(() => store.restorePendingRelease([''] as string[])).to.throw(
        InvalidIpStoreInputError,
      );
      expect(() => store.restorePendingRelease('x' as never)).to.throw(InvalidIpStoreInputError);
      expect(store.counts().Available).to.equal(1);
    });
  });

  describe('list and counts', () => {
    it('lists by address order and filters by state', () => {
      sync([container(1, [10, 9, 100])]);
      store.assign(pod(1));
      expect(store.list().map((r) => r.ip)).to.deep.equal(['10.1.0.9', '10.1.0.10', '10.1.0.100']);
      expect(store.list(['Assigned']).map((r) => r.ip)).to.deep.equal(['10.1.0.9']);
      expect(() => store.list(['Bogus' as 'Assigned'])).to.throw(InvalidIpStoreInputError);
    });
  });

  describe('asPoolIpStore', () => {
    it('resolves what the store returns and rejects what it throws', async () => {
      sync([container(1, [2, 3])]);
      const pool = asPoolIpStore(store);
      expect(await pool.markPendingRelease(1)).to.have.length(1);
      expect((await pool.view()).pendingReleaseIds).to.have.length(1);
      let error: unknown;
      await pool.markPendingRelease(5).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(InsufficientReleasableError);
      expect((await pool.view()).pendingReleaseIds).to.have.length(1);
      expect((await pool.view()).activeCount).to.equal(1); // Available + Assigned + PendingProgramming
      expect((await pool.view()).markableCount).to.equal(1); // Available + PendingProgramming
      store.assign({
        podInterfaceID: 'i1',
        infraContainerID: 'c1',
        podName: 'p',
        podNamespace: 'd',
      });
      expect((await pool.view()).activeCount).to.equal(1);
      expect((await pool.view()).markableCount).to.equal(0);
    });

    it('counts as active only the IPs the NNC status backs', async () => {
      sync([container(1, [2, 3, 4])]);
      store.assign(pod(1));
      store.syncInventory([container(1, [3, 4])]); // the Assigned .2 vanished: kept for its pod
      const pool = asPoolIpStore(store);
      expect(store.counts().Assigned).to.equal(1);
      expect((await pool.view()).activeCount).to.equal(2);
      expect((await pool.view()).markableCount).to.equal(2);
    });
  });

  it('refuses calls after close', () => {
    store.close();
    expect(() => store.counts()).to.throw(/closed/);
    store.close();
  });
});
