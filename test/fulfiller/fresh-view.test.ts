// docs/design/fulfiller.md#high-availability, event by event over the in-memory cluster: a term starts
// from fresh lists, never from the watches' cache, and no action is taken
// while a watch is down (the log and waitReason() say why).
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
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
    const standby = newFulfiller({ cluster, clock, config, logger, lead: false });
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

describe("fulfiller: the previous term's fence", () => {
  it('a node whose round waited for the fence goes again at once when the fence opened during that round', async () => {
    const cluster = new FakeCluster();
    const clock = new FakeClock();
    const logger = createLogger({ level: 'debug', transports: [new CaptureTransport()] });
    cluster.setSpec('node-a', { requestedIPCount: 8 });
    cluster.setSpec('node-b', { requestedIPCount: 8 });
    // As run.ts wires it (it puts the addresses finalizer on both NNCs).
    const old = newFulfiller({ cluster, clock, config, logger });
    await old.settle();
    await old.fulfiller.stop();
    // The new term's fence patch of node-b is answered only once node-a's
    // round is at its backend write: the fence opens while that round runs.
    // node-a's own patch fails (its answer would queue node-a again).
    const markTerm = cluster.lifecycleApi.markTerm;
    let answerB!: () => void;
    const bAnswered = new Promise<void>((resolve) => (answerB = resolve));
    cluster.lifecycleApi.markTerm = async (name, term) => {
      if (name === 'node-a') throw new Error('connection reset');
      await bAnswered;
      return markTerm(name, term);
    };
    // node-a gives one address back and asks for 8 more: its round releases
    // at once and waits with the new ones.
    const ids = dynamicContainers(cluster.nncs.get('node-a')!)[0]!.ipAssignments!.map(
      (a) => a.name,
    );
    cluster.setSpec('node-a', { requestedIPCount: 16, ipsNotInUse: [ids[0]!] });
    // No watch event comes meanwhile (node-a's own write would queue it again).
    cluster.holdEvents = true;
    const startedAt = clock.now();
    let rounds = 0;
    const standby = newFulfiller({
      cluster,
      clock,
      config,
      logger,
      wrap: (cidr) => ({
        kind: 'test',
        subnets: () => cidr.subnets(),
        families: () => cidr.families(),
        releaseAll: (node, nc) => cidr.releaseAll(node, nc),
        apply: async (node, change) => {
          if (node.name === 'node-a' && rounds++ === 0) {
            expect(change.families[0]!.add).to.equal(0); // it waits for the fence
            answerB();
            await flush();
          }
          return cidr.apply(node, change);
        },
      }),
    });
    // Well inside the fence's own end (the request timeout, 60 s).
    await standby.settle();
    expect(clock.now() - startedAt).to.be.below(60_000);
    expect(rounds).to.equal(2);
    expect(ipsOf(cluster, 'node-a')).to.have.length(17);
    const held = dynamicContainers(cluster.nncs.get('node-a')!)[0]!.ipAssignments!;
    expect(held.map((a) => a.name)).to.not.include(ids[0]);
    expect(duplicates(cluster)).to.deep.equal([]);
    await standby.fulfiller.stop();
  });
});
