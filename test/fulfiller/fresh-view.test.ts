// docs/design/fulfiller.md#high-availability, event by event over the in-memory cluster: a term starts
// from fresh lists, never from the watches' cache, and no action is taken
// while a watch is down (the log and waitReason() say why).
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { vanished } from '../../src/fulfiller/fresh-lists.ts';
import { ViewFreshness } from '../../src/fulfiller/view.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import { FakeClock, flush } from './fake-clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { newFulfiller } from './harness.ts';

const config = makeFulfillerConfig({ subnet: '10.240.0.0/25', minIntervalMs: 0 });

function ipsOf(cluster: FakeCluster, name: string): string[] {
  const nc = dynamicContainers(cluster.nncs.get(name)!)[0];
  return nc ? [nc.primaryIP!, ...(nc.ipAssignments ?? []).map((a) => a.ip)] : [];
}

function duplicates(cluster: FakeCluster): string[] {
  return [...cluster.holders()].filter(([, h]) => h.length > 1).map(([ip]) => ip);
}

describe('fulfiller: a term starts from fresh lists', () => {
  it('vanished(): absent from the list and last read older than it', () => {
    const known: Array<[string, bigint | undefined]> = [
      ['old', 5n],
      ['newer', 12n],
      ['listed', 3n],
      ['unversioned', undefined],
    ];
    expect(vanished(known, new Set(['listed']), '10')).to.deep.equal(['old']);
    expect(vanished(known, new Set(), undefined)).to.deep.equal([]);
  });

  it('ViewFreshness says which watch is down and since when', () => {
    const view = new ViewFreshness();
    expect(view.waitReason(0)).to.equal(undefined);
    view.down('nnc', 'connect ECONNREFUSED', 1000);
    view.down('nnc', 'socket hang up', 3000);
    expect(view.waitReason(6000)).to.equal(
      'the NodeNetworkConfig watch is down since 5 s (socket hang up)',
    );
    view.up('nnc');
    expect(view.waitReason(6000)).to.equal(undefined);
    expect(view.isLoaded).to.equal(false);
    view.loaded('42', '41', 7000);
    expect(view.statement()).to.deep.equal({
      nncListRv: '42',
      nodeListRv: '41',
      listedAt: 7000,
      down: {},
    });
  });

  it("the review's case: a standby with a stale cache leads from a fresh list and gives away nothing held", async () => {
    const cluster = new FakeCluster();
    const clock = new FakeClock();
    const capture = new CaptureTransport();
    const logger = createLogger({ level: 'debug', transports: [capture] });
    // The old leader: serves node-a 32 addresses.
    cluster.setSpec('node-a', { requestedIPCount: 0 });
    const old = newFulfiller({ cluster, clock, config, logger });
    await old.settle();
    // The standby lists now; then its watches go down: it hears no more.
    const standby = newFulfiller({ cluster, clock, config, logger, lists: true, lead: false });
    cluster.fulfiller = old.fulfiller;
    cluster.setSpec('node-a', { requestedIPCount: 32 });
    await old.settle();
    expect(ipsOf(cluster, 'node-a')).to.have.length(33);
    await old.fulfiller.stop();
    // Three Nodes join and ask while the standby's watches are down.
    cluster.fulfiller = undefined;
    for (const n of ['n1', 'n2', 'n3']) cluster.setSpec(n, { requestedIPCount: 8 });
    await flush();
    cluster.fulfiller = standby.fulfiller;
    standby.fulfiller.watchDown('nnc', 'socket hang up');
    cluster.failLists = 2;
    standby.fulfiller.lead();
    await standby.settle();
    expect(duplicates(cluster), 'while the NNC watch is down').to.deep.equal([]);
    expect(standby.fulfiller.waitReason()).to.match(/NodeNetworkConfig watch is down/);
    expect(capture.find('allocations wait').length > 0).to.equal(true);
    expect(capture.find('new leader cannot list yet; nothing is allocated').length > 0).to.equal(
      true,
    );
    // The watch is back: the waiting nodes are served, from the fresh list.
    standby.fulfiller.synced(cluster.list());
    await standby.settle();
    await flush();
    await standby.settle();
    for (const n of ['n1', 'n2', 'n3']) expect(ipsOf(cluster, n), n).to.have.length(9);
    expect(duplicates(cluster)).to.deep.equal([]);
    expect(capture.find('allocations resume').length > 0).to.equal(true);
    await standby.fulfiller.stop();
  });
});
