// The store follows the NNC (src/ipstore/follow-nnc.ts), as the sidecar and
// simulate's virtual node run it, over the real SQLite store in memory.
import { expect } from 'chai';
import { followNnc, type StoreNotice } from '../../src/ipstore/follow-nnc.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import type { NodeIpStore } from '../../src/ipstore/types.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { NetworkContainer, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { container, ipId, pod } from './helpers.ts';

function nnc(containers: NetworkContainer[], ipsNotInUse: string[] = []): NodeNetworkConfig {
  return {
    metadata: { name: 'node-1' },
    spec: { requestedIPCount: 4, ipsNotInUse },
    status: { scaler: { batchSize: 4 }, networkContainers: containers },
  };
}

describe('ipstore/followNnc', () => {
  let store: NodeIpStore;
  let logs: CaptureTransport;
  let notices: StoreNotice[];
  let follow: ReturnType<typeof followNnc>;
  beforeEach(() => {
    store = openIpStore({ memory: true });
    logs = new CaptureTransport();
    notices = [];
    follow = followNnc(store, {
      logger: createLogger({ transports: [logs], level: 'debug' }),
      notify: (n) => notices.push(n),
    });
  });
  afterEach(() => store.close());

  it('syncs the inventory and restores PendingRelease from the first NNC only', () => {
    follow.follow(nnc([container(1, [2, 3, 4, 5])], [ipId(1, 2)]));
    expect(store.pendingReleaseIds()).to.deep.equal([ipId(1, 2)]);
    expect(logs.find('pending release restored')).to.have.length(1);
    store.markPendingRelease(1);
    // A later NNC that does not announce the new mark leaves it marked.
    follow.follow(nnc([container(1, [2, 3, 4, 5, 6])], [ipId(1, 2)]));
    expect(store.pendingReleaseIds()).to.have.length(2);
    expect(store.counts().Available).to.equal(3);
    expect(logs.find('inventory synced').map((r) => r.added)).to.deep.equal([4, 1]);
  });

  it('does not sync the same containers again (a spec write), unless the last sync left a conflict', () => {
    let syncs = 0;
    const real = store.syncInventory.bind(store);
    store.syncInventory = (...args) => {
      syncs += 1;
      return real(...args);
    };
    expect(follow.follow(nnc([container(1, [2, 3])]))).to.equal('synced');
    const held = store.assign(pod(1, ['10.1.0.2']));
    // The sidecar's own spec write comes back as a new NNC with the same status.
    const specOnly = nnc([container(1, [2, 3])], [ipId(1, 3)]);
    specOnly.spec!.requestedIPCount = 8;
    expect(follow.follow(specOnly)).to.equal('unchanged');
    expect(syncs).to.equal(1);
    expect(follow.follow(nnc([container(1, [2, 3, 4])]))).to.equal('synced');
    expect(syncs).to.equal(2);

    // The status moves the held id to another address: a conflict while the pod holds it.
    const moved = container(1, [3, 4]);
    moved.ipAssignments!.push({ name: held.id, ip: '10.1.0.9' });
    expect(follow.follow(nnc([moved]))).to.equal('synced');
    expect(store.list().map((r) => r.ip)).to.not.include('10.1.0.9');
    store.release(pod(1).podInterfaceID);
    // The same status again is synced, and the address it waited for joins the pool.
    expect(follow.follow(nnc([moved]))).to.equal('synced');
    expect(syncs).to.equal(4);
    expect(store.list().map((r) => `${r.id} ${r.ip} ${r.state}`)).to.include(
      `${held.id} 10.1.0.9 Available`,
    );
    expect(follow.follow(nnc([moved]))).to.equal('unchanged');
    expect(syncs).to.equal(4);
  });

  it('ignores an NNC the monitor would ignore', () => {
    follow.follow({ metadata: { name: 'node-1' }, status: { networkContainers: [] } });
    expect(store.list()).to.deep.equal([]);
    follow.follow(nnc([container(1, [2])]));
    expect(store.list()).to.have.length(1);
  });

  it('keeps an Assigned IP that left the status, and says so', () => {
    follow.follow(nnc([container(1, [2, 3])]));
    const held = store.assign(pod(1));
    follow.follow(
      nnc([
        container(
          1,
          [2, 3].filter((h) => `10.1.0.${h}` !== held.ip),
        ),
      ]),
    );
    expect(store.list(['Assigned']).map((r) => r.id)).to.deep.equal([held.id]);
    expect(notices.map((n) => n.type)).to.deep.equal(['assigned-vanished']);
    expect(logs.find('Assigned IP vanished from status')[0]?.level).to.equal('error');
  });

  it('refuses a malformed status: store untouched, reported, still healthy', () => {
    follow.follow(nnc([container(1, [2, 3])]));
    const before = store.list();
    const bad = container(1, [2, 3]);
    bad.ipAssignments = [...(bad.ipAssignments ?? []), { name: 'dup', ip: '10.1.0.2' }];
    follow.follow(nnc([bad]));
    expect(store.list()).to.deep.equal(before);
    expect(notices.map((n) => n.type)).to.deep.equal(['invalid-status']);
    expect(follow.healthy()).to.equal(true);
  });

  it('is unhealthy while the store cannot write, healthy again after a sync', () => {
    follow.follow(nnc([container(1, [2])]));
    const real = store.syncInventory.bind(store);
    store.syncInventory = () => {
      throw new Error('disk I/O error');
    };
    follow.follow(nnc([container(1, [2, 3])]));
    expect(follow.healthy()).to.equal(false);
    store.syncInventory = real;
    follow.follow(nnc([container(1, [2, 3])]));
    expect(follow.healthy()).to.equal(true);
  });
});
