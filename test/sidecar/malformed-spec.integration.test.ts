// Found by the CRD-object fuzz (test/fuzz/): an out-of-band edit that leaves
// the NNC spec malformed - spec.ipsNotInUse not a list of ids, or
// spec.requestedIPCount not a count - was never corrected when it read as
// what the sidecar wanted anyway (garbage read as 0 / as no ids), and a
// malformed ipsNotInUse stayed owned by its writer (the apply left the field
// out). The fulfiller refuses such a spec, so the node was starved for good.
// The sidecar must take the spec back: a valid count and a valid list.
// (Our CRD's schema refuses the wrong types; a CRD from an old or foreign
// install may not, and nothing refuses a negative count.)
import { expect } from 'chai';
import { startTestCluster } from '../support/test-cluster.ts';
import {
  container,
  createNnc,
  DEFAULT_SCALER,
  getNnc,
  mergeSpec,
  sidecarOptions,
  sleep,
  startSidecar,
  tempDir,
  waitFor,
  type Cluster,
  type TestSidecar,
} from './harness.ts';

describe('sidecar integration: a malformed spec left by another writer (fuzz finding)', function () {
  this.timeout(20_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let sidecar: TestSidecar | undefined;
  let n = 0;
  before(async () => {
    // Schemaless CRDs, no RBAC; the sidecar is the admin, on client-node's own connections.
    c = await startTestCluster({ crds: 'schemaless', pooled: false });
  });
  after(async () => c?.close());
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(async () => {
    await sidecar?.stop();
    sidecar = undefined;
    dir.remove();
  });

  const edits: [string, Record<string, unknown>][] = [
    ['ipsNotInUse a string', { ipsNotInUse: 'garbage' }],
    ['ipsNotInUse of numbers', { ipsNotInUse: [1, null] }],
    ['ipsNotInUse an object', { ipsNotInUse: { a: 1 } }],
    ['requestedIPCount a string', { requestedIPCount: 'lots' }],
    ['requestedIPCount negative', { requestedIPCount: -3 }],
  ];
  /** A new node with an empty pool and no buffer, its sidecar started and ready. */
  const idleNode = async (): Promise<{ node: string; running: TestSidecar }> => {
    n += 1;
    const node = `malformed-${n}`;
    await createNnc(
      c,
      node,
      { requestedIPCount: 0 },
      {
        scaler: { ...DEFAULT_SCALER, requestThresholdPercent: 0 },
        networkContainers: [container([])],
      },
    );
    const running = await startSidecar(c, sidecarOptions(c, node, dir.path));
    sidecar = running;
    await waitFor('ready', () => running.monitor.snapshot().ready);
    return { node, running };
  };

  for (const [what, edit] of edits) {
    it(`${what}: corrected to a valid spec`, async () => {
      // No pods and no buffer: the sidecar's target is 0, what the garbage reads as.
      const { node } = await idleNode();
      await sleep(200);
      await mergeSpec(c, node, edit);
      await waitFor(
        'a valid spec',
        async () => {
          const spec = (await getNnc(c, node)).spec as Record<string, unknown>;
          const ids = spec.ipsNotInUse;
          return (
            spec.requestedIPCount === 0 &&
            (ids === undefined || (Array.isArray(ids) && ids.length === 0))
          );
        },
        5000,
      ).catch(async (err: unknown) => {
        throw new Error(
          `${(err as Error).message}: ${JSON.stringify((await getNnc(c, node)).spec)}`,
        );
      });
    });
  }

  it('a valid spec the sidecar did not write is left alone when it is what the sidecar wants', async () => {
    const { node, running } = await idleNode();
    await sleep(300);
    const writes = running.monitor.snapshot().writes;
    await mergeSpec(c, node, { ipsNotInUse: [] });
    await sleep(500);
    expect(running.monitor.snapshot().writes).to.equal(writes);
  });
});
