// One record per node, and the address index derived from the records
// (docs/decisions/0036), as a property: whatever the interleaving of watch
// events (late, lost with a re-list), re-reads after 409s, uncertain writes
// (landed or not), spec changes, NNCs deleted under live Nodes and Nodes
// deleted (the production quarantine), no address is ever in two NNC
// statuses, every address a status holds is in use in the index, the index
// is what the records hold, and once everything is delivered and settled
// none is lost: the free count is the capacity minus what the NNCs hold.
import { expect } from 'chai';
import fc from 'fast-check';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { UNANSWERED_WRITE_MS } from '../../src/fulfiller/address-index.ts';
import type { NodeBook } from '../../src/fulfiller/node-book.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import { FakeClock, flush } from './fake-clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { newFulfiller } from './harness.ts';

const NODES = ['a', 'b', 'c'] as const;
const SUBNET = '10.7.0.0/26'; // 59 usable

type Op =
  | { kind: 'spec'; node: (typeof NODES)[number]; request: number; release: number }
  | { kind: 'deliver'; count: number }
  | { kind: 'lose' }
  | { kind: 'relist' }
  | { kind: 'fail'; code: 409 | 500 | 0 }
  | { kind: 'time'; ms: number }
  | { kind: 'resync' }
  | { kind: 'deleteNnc'; node: (typeof NODES)[number] }
  | { kind: 'deleteNode'; node: (typeof NODES)[number] }
  | { kind: 'addNode'; node: (typeof NODES)[number] };

const node = fc.constantFrom(...NODES);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('spec' as const),
      node,
      request: fc.integer({ min: 0, max: 24 }),
      release: fc.nat(6),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('deliver' as const),
      count: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('lose' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('relist' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('fail' as const),
      code: fc.constantFrom(409 as const, 500 as const, 0 as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('time' as const),
      ms: fc.integer({ min: 1, max: 400 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resync' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteNnc' as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteNode' as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('addNode' as const), node }) },
);

/** The index counts, for each address, the records that hold it: nothing else. */
function indexIsDerived(book: NodeBook, where: string): void {
  const counts = new Map<string, number>();
  for (const r of book.all())
    for (const ip of r.holdings()) counts.set(ip, (counts.get(ip) ?? 0) + 1);
  expect(book.addresses.size, `${where}: addresses in the index`).to.equal(counts.size);
  for (const [ip, n] of counts) expect(book.addresses.holdersOf(ip), `${where}: ${ip}`).to.equal(n);
}

describe('fulfiller: node records and the address index (property)', () => {
  it('no address on two NNCs and none lost, over random interleavings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40 }), async (ops) => {
        const cluster = new FakeCluster();
        const clock = new FakeClock();
        const config = makeFulfillerConfig({
          subnet: SUBNET,
          minIntervalMs: 0,
          exhaustionThreshold: 0,
          recoveryMargin: 0,
          backoff: { initialMs: 50, maxMs: 400 },
        });
        for (const n of NODES) cluster.addNode(n);
        const { fulfiller, book, backend, settle } = newFulfiller({
          cluster,
          clock,
          config,
          logger: silentLogger(),
        });
        await flush();
        cluster.holdEvents = true;

        const check = (where: string): void => {
          for (const [ip, owners] of cluster.holders()) {
            expect(owners, `${where}: ${ip} on ${owners.join(', ')}`).to.have.length(1);
            expect(
              book.addresses.isUsed(ip),
              `${where}: ${ip} held by ${owners[0]} but free`,
            ).to.equal(true);
          }
          indexIsDerived(book, where);
        };

        for (const [i, o] of ops.entries()) {
          switch (o.kind) {
            case 'spec': {
              const nnc = cluster.nncs.get(o.node);
              if (!nnc) break;
              const ids = (dynamicContainers(nnc)[0]?.ipAssignments ?? []).map((a) => a.name);
              cluster.setSpec(o.node, {
                requestedIPCount: o.request,
                ipsNotInUse: ids.slice(0, o.release),
              });
              break;
            }
            case 'deliver':
              // A watch delivers in order.
              for (const d of cluster.held.splice(0, o.count)) cluster.deliver(d);
              break;
            case 'lose':
              // The watch fails: what it had not delivered is lost, and it lists again.
              cluster.held.length = 0;
              fulfiller.nodesSynced(cluster.nodeList());
              fulfiller.synced(cluster.list());
              break;
            case 'relist':
              for (const d of cluster.held.splice(0)) cluster.deliver(d);
              fulfiller.synced(cluster.list());
              break;
            case 'fail':
              cluster.failWrites.push(o.code);
              break;
            case 'time':
              await clock.advance(o.ms);
              break;
            case 'resync':
              fulfiller.resync();
              break;
            case 'deleteNnc':
              cluster.delete(o.node);
              break;
            case 'deleteNode':
              cluster.deleteNode(o.node);
              break;
            case 'addNode':
              if (!cluster.nodes.has(o.node)) cluster.addNode(o.node);
              break;
          }
          await flush();
          check(`step ${i} ${o.kind}`);
        }

        // Everything arrives, in order; faults stop; the queue settles.
        cluster.failWrites.length = 0;
        cluster.holdEvents = false;
        for (const d of cluster.held.splice(0)) cluster.deliver(d);
        fulfiller.synced(cluster.list());
        await settle();
        // Writes in doubt are settled once the request timeout is over
        // (docs/design/fulfiller.md#high-availability); deleted Nodes' quarantines end.
        await clock.advance(Math.max(UNANSWERED_WRITE_MS, config.quarantineMs));
        fulfiller.resync();
        await settle();
        await clock.advance(config.quarantineMs);
        fulfiller.resync();
        await settle();
        check('settled');
        const held = cluster.holders();
        expect(backend.pool.inUse, 'addresses in use but held by no NNC').to.equal(held.size);
        expect(fulfiller.stats().subnets[0]!.free).to.equal(59 - held.size);
        // Every live Node has its NNC again; none of a deleted Node is left.
        expect([...cluster.nncs.keys()].sort()).to.deep.equal([...cluster.nodes.keys()].sort());
        await fulfiller.stop();
      }),
      { numRuns: 150 },
    );
  });
});
