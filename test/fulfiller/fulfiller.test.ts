import { expect } from 'chai';
import fc from 'fast-check';
import type { IpBackend } from '../../src/fulfiller/backend.ts';
import { NodeSetupError } from '../../src/fulfiller/backend.ts';
import type { CidrBackend } from '../../src/fulfiller/cidr-backend.ts';
import { ipToInt, isUsable, parseCidr } from '../../src/fulfiller/cidr.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { UNANSWERED_WRITE_MS } from '../../src/fulfiller/address-index.ts';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import type { Fulfiller } from '../../src/fulfiller/fulfiller.ts';
import type { EventDetails, EventRecorder, InvolvedObject } from '../../src/kube/events.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import { FakeClock } from './fake-clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { newFulfiller } from './harness.ts';

interface Harness {
  cluster: FakeCluster;
  fulfiller: Fulfiller;
  backend: CidrBackend;
  clock: FakeClock;
  events: Array<{ involved: InvolvedObject; details: EventDetails }>;
  capture: CaptureTransport;
  settle(): Promise<void>;
}

function start(
  overrides: Partial<FulfillerConfig> = {},
  cluster = new FakeCluster(),
  clock = new FakeClock(),
  wrap?: (cidr: CidrBackend) => IpBackend,
): Harness {
  const config = makeFulfillerConfig({ subnet: '10.240.0.0/24', minIntervalMs: 10, ...overrides });
  const capture = new CaptureTransport();
  const events: Harness['events'] = [];
  const recorder: EventRecorder = {
    recordEvent: async (involved, details) => {
      events.push({ involved, details });
    },
    flush: async () => {},
  };
  let id = 0;
  const { fulfiller, backend, settle } = newFulfiller({
    cluster,
    clock,
    config,
    logger: createLogger({ level: 'debug', transports: [capture] }),
    events: recorder,
    newId: () => `id-${String(++id).padStart(4, '0')}-${Math.random().toString(36).slice(2, 8)}`,
    ...(wrap ? { wrap } : {}),
  });
  return { cluster, fulfiller, backend, clock, events, capture, settle };
}

function assignments(cluster: FakeCluster, node: string) {
  const nnc = cluster.nncs.get(node)!;
  return dynamicContainers(nnc)[0]?.ipAssignments ?? [];
}

function expectNoSharing(cluster: FakeCluster, subnet: string): void {
  const cidr = parseCidr(subnet);
  for (const [ip, owners] of cluster.holders()) {
    expect(owners, `${ip} held by ${owners.join(',')}`).to.have.length(1);
    expect(isUsable(cidr, ipToInt(ip)), `${ip} usable`).to.equal(true);
  }
}

describe('fulfiller/controller (in-memory API)', () => {
  it('fills a new NNC: container, scaler, stable uuids, Updated', async () => {
    const h = start();
    h.cluster.setSpec('n1', { requestedIPCount: 16 });
    await h.settle();
    const nnc = h.cluster.nncs.get('n1')!;
    const nc = dynamicContainers(nnc)[0]!;
    expect(nc.assignmentMode).to.equal('dynamic');
    expect(nc.type).to.equal('vnet');
    expect(nc.subnetName).to.equal('pods');
    expect(nc.subnetAddressSpace).to.equal('10.240.0.0/24');
    expect(nc.defaultGateway).to.equal('10.240.0.1');
    expect(nc.primaryIP).to.equal('10.240.0.4');
    expect(nc.ipAssignments).to.have.length(16);
    expect(new Set(nc.ipAssignments!.map((a) => a.name)).size).to.equal(16);
    expect(nnc.status?.assignedIPCount).to.equal(16);
    expect(nnc.status?.status).to.equal('Updated');
    expect(nnc.status?.scaler).to.deep.equal({
      batchSize: 16,
      requestThresholdPercent: 50,
      releaseThresholdPercent: 150,
      maxIPCount: 250,
    });
    const writes = h.cluster.writes;
    // The write's own echo and a resync cause no further write.
    h.fulfiller.resync();
    await h.settle();
    expect(h.cluster.writes).to.equal(writes);
    // Growing keeps the existing uuids.
    const before = nc.ipAssignments!.map((a) => a.name);
    h.cluster.setSpec('n1', { requestedIPCount: 32 });
    await h.settle();
    const after = assignments(h.cluster, 'n1');
    expect(after).to.have.length(32);
    expect(after.slice(0, 16).map((a) => a.name)).to.deep.equal(before);
    expect(dynamicContainers(h.cluster.nncs.get('n1')!)[0]!.version).to.equal(1);
    expectNoSharing(h.cluster, '10.240.0.0/24');
    await h.fulfiller.stop();
  });

  it('removes exactly the ids in ipsNotInUse and frees their addresses', async () => {
    const h = start();
    h.cluster.setSpec('n1', { requestedIPCount: 8 });
    await h.settle();
    const all = assignments(h.cluster, 'n1');
    const gone = all.slice(0, 3);
    const freeBefore = h.backend.pool.free;
    h.cluster.setSpec('n1', {
      requestedIPCount: 5,
      ipsNotInUse: [...gone.map((a) => a.name), 'unknown-id'],
    });
    await h.settle();
    const left = assignments(h.cluster, 'n1');
    expect(left.map((a) => a.name)).to.deep.equal(all.slice(3).map((a) => a.name));
    expect(h.backend.pool.free).to.equal(freeBefore + 3);
    for (const a of gone) expect(h.backend.pool.isUsed(a.ip)).to.equal(false);
    await h.fulfiller.stop();
  });

  it('a restarted fulfiller rebuilds its allocations from the NNC statuses', async () => {
    const h = start();
    h.cluster.setSpec('n1', { requestedIPCount: 20 });
    h.cluster.setSpec('n2', { requestedIPCount: 20 });
    await h.settle();
    await h.fulfiller.stop();
    const snapshot = h.cluster.list();
    const h2 = start({}, h.cluster);
    expect(h2.backend.pool.inUse).to.equal(42); // 40 secondaries + 2 primaries
    h.cluster.setSpec('n3', { requestedIPCount: 30 });
    await h2.settle();
    expectNoSharing(h.cluster, '10.240.0.0/24');
    for (const old of snapshot) {
      expect(assignments(h.cluster, old.metadata.name)).to.deep.equal(
        dynamicContainers(old)[0]!.ipAssignments,
      );
    }
    expect(assignments(h.cluster, 'n3')).to.have.length(30);
    await h2.fulfiller.stop();
  });

  it('retries a 409 with a fresh read and backs off on 500', async () => {
    const h = start();
    h.cluster.failWrites.push(409, 500);
    h.cluster.setSpec('n1', { requestedIPCount: 4 });
    await h.settle();
    expect(assignments(h.cluster, 'n1')).to.have.length(4);
    expect(h.fulfiller.stats().conflicts).to.be.at.least(1);
    expect(h.fulfiller.stats().failures).to.equal(1);
    expect(h.capture.find('node action failed')).to.have.length(1);
    // Nothing leaked: the write that followed the 500 (on the same base
    // version) succeeded, so the 500's write can never land.
    expect(h.backend.pool.inUse).to.equal(h.cluster.holders().size);
    await h.fulfiller.stop();
  });

  it('a write that landed but reported failure is settled from a fresh read', async () => {
    const h = start();
    h.cluster.failWrites.push(0);
    h.cluster.setSpec('n1', { requestedIPCount: 6 });
    await h.settle();
    expect(assignments(h.cluster, 'n1')).to.have.length(6);
    expect(h.backend.pool.inUse).to.equal(h.cluster.holders().size);
    expectNoSharing(h.cluster, '10.240.0.0/24');
    await h.fulfiller.stop();
  });

  for (const [how, code] of [
    ['nobody answered', -1],
    ['answered 500 (it may still land)', 500],
  ] as const)
    it(`a write ${how} keeps its address until the request timeout has passed`, async () => {
      // /29: three usable addresses: n1 holds all of them (primary + 2), SubnetFull.
      const h = start({
        subnet: '10.8.0.0/29',
        exhaustionThreshold: 0,
        recoveryMargin: 0,
        resyncMs: 10_000,
      });
      h.cluster.setSpec('n1', { requestedIPCount: 5 });
      await h.settle();
      expect(h.cluster.nncs.get('n1')!.status?.status).to.equal('SubnetFull');
      // n1 gives one back: the release is written; the re-allocation of the
      // freed address gets no answer (it may still land somewhere).
      h.cluster.failWrites.push(200, code);
      const [first] = assignments(h.cluster, 'n1');
      h.cluster.setSpec('n1', { requestedIPCount: 5, ipsNotInUse: [first!.name] });
      await h.settle();
      expect(assignments(h.cluster, 'n1')).to.have.length(1);
      expect(h.cluster.holders().size).to.equal(2);
      expect(h.backend.pool.inUse, 'claimed while the write may still land').to.equal(3);
      // Resyncs within the API server's request timeout keep it; the first after settles it.
      await h.clock.advance(50_000);
      expect(h.backend.pool.inUse).to.equal(3);
      await h.clock.advance(20_000);
      await h.settle();
      expect(h.backend.pool.inUse).to.equal(h.cluster.holders().size);
      expect(assignments(h.cluster, 'n1')).to.have.length(2);
      await h.fulfiller.stop();
    });

  it('publishes the CSS: exhausted below the threshold, recovered above the margin', async () => {
    // /26: 59 usable. Threshold 10, recovery at 15 free.
    const h = start({
      subnet: '10.9.0.0/26',
      exhaustionThreshold: 10,
      recoveryMargin: 5,
      exhaustionHoldMs: 0,
    });
    await h.settle();
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(false);
    h.cluster.setSpec('n1', { requestedIPCount: 50 });
    await h.settle();
    expect(h.backend.pool.free).to.equal(8);
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(true);
    expect(h.events.some((e) => e.details.reason === 'SubnetExhausted')).to.equal(true);
    const ids = assignments(h.cluster, 'n1').map((a) => a.name);
    // 12 free: still exhausted (hysteresis)
    h.cluster.setSpec('n1', { requestedIPCount: 46, ipsNotInUse: ids.slice(0, 4) });
    await h.settle();
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(true);
    h.cluster.setSpec('n1', { requestedIPCount: 40, ipsNotInUse: ids.slice(0, 10) });
    await h.settle();
    expect(h.backend.pool.free).to.equal(18);
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(false);
    expect(h.cluster.cssWrites.map((w) => w.exhausted)).to.deep.equal([false, true, false]);
    await h.fulfiller.stop();
  });

  it('keeps an exhausted subnet published for the hold time, then recovers', async () => {
    const clock = new FakeClock();
    // settle() plays out 50 s of virtual time; the hold is longer than two of them.
    const h = start(
      {
        subnet: '10.9.0.0/26',
        exhaustionThreshold: 10,
        recoveryMargin: 5,
        exhaustionHoldMs: 120_000,
      },
      new FakeCluster(),
      clock,
    );
    await h.settle();
    h.cluster.setSpec('n1', { requestedIPCount: 50 });
    await h.settle();
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(true);
    // The node shrinks at once (as sidecars do on exhaustion): plenty free again...
    const ids = assignments(h.cluster, 'n1').map((a) => a.name);
    h.cluster.setSpec('n1', { requestedIPCount: 20, ipsNotInUse: ids.slice(0, 30) });
    await h.settle();
    expect(h.backend.pool.free).to.equal(38);
    // ...but the CSS stays exhausted until the hold has passed.
    const exhaustedAt = Date.parse(h.cluster.cssWrites[1]?.timestamp ?? '');
    expect(clock.now()).to.be.below(exhaustedAt + 120_000);
    await clock.advance(exhaustedAt + 119_000 - clock.now());
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(true);
    await clock.advance(2_000);
    expect(h.cluster.css.get('pods')?.exhausted).to.equal(false);
    expect(h.cluster.cssWrites.map((w) => w.exhausted)).to.deep.equal([false, true, false]);
    await h.fulfiller.stop();
  });

  it('a request beyond the subnet fills what it can and reports SubnetFull', async () => {
    const h = start({ subnet: '10.9.0.0/27', exhaustionThreshold: 2 });
    h.cluster.setSpec('n1', { requestedIPCount: 100 });
    await h.settle();
    // /27: 27 usable, one is the primary.
    expect(assignments(h.cluster, 'n1')).to.have.length(26);
    expect(h.cluster.nncs.get('n1')!.status?.status).to.equal('SubnetFull');
    expect(h.events.filter((e) => e.details.reason === 'SubnetFull')).to.have.length(1);
    await h.fulfiller.stop();
  });

  it('a node that cannot get a primary IP waits as SubnetFull and is set up once addresses free', async () => {
    // /29: three usable addresses.
    const h = start({ subnet: '10.8.0.0/29', exhaustionThreshold: 0, recoveryMargin: 0 });
    h.cluster.setSpec('n1', { requestedIPCount: 2 });
    await h.settle();
    h.cluster.setSpec('n2', { requestedIPCount: 1 });
    await h.settle();
    const n2 = h.cluster.nncs.get('n2')!;
    expect(n2.status?.status).to.equal('SubnetFull');
    expect(n2.status?.networkContainers).to.deep.equal([]);
    expect(n2.status?.scaler?.batchSize).to.equal(16);
    expect(h.fulfiller.stats().failures).to.equal(0);
    const ids = assignments(h.cluster, 'n1').map((a) => a.name);
    h.cluster.setSpec('n1', { requestedIPCount: 0, ipsNotInUse: ids });
    await h.settle();
    expect(assignments(h.cluster, 'n2')).to.have.length(1);
    expect(h.cluster.nncs.get('n2')!.status?.status).to.equal('Updated');
    expectNoSharing(h.cluster, '10.8.0.0/29');
    await h.fulfiller.stop();
  });

  it('a node the backend cannot set up gets a Warning, no status, and a retry with backoff', async () => {
    const h = start({}, new FakeCluster(), new FakeClock(), (cidr) => ({
      kind: 'test',
      subnets: () => cidr.subnets(),
      families: () => cidr.families(),
      releaseAll: (node, nc) => cidr.releaseAll(node, nc),
      apply: async (node, change) => {
        if (!node.providerID)
          throw new NodeSetupError('NoProviderID', `node ${node.name} has no spec.providerID`);
        return cidr.apply(node, change);
      },
    }));
    h.cluster.addNode('n1');
    // It keeps failing, so it never settles: let some retries happen.
    await h.clock.advance(5_000);
    const nnc = h.cluster.nncs.get('n1')!;
    expect(nnc.status).to.equal(undefined);
    const failures = h.fulfiller.stats().failures;
    // Backoff: 200 ms doubling, so a handful of attempts in 5 s, not hundreds.
    expect(failures).to.be.within(2, 6);
    const warnings = h.events.filter((e) => e.details.reason === 'NoProviderID');
    expect(warnings.length).to.be.at.least(1);
    expect(warnings[0]!.involved).to.include({ kind: 'NodeNetworkConfig', name: 'n1' });
    expect(h.capture.find('node cannot be set up')[0]).to.include({
      node: 'n1',
      reason: 'NoProviderID',
    });
    // The Node gets its providerID: the next retry sets it up.
    h.fulfiller.upsertNode({
      metadata: { name: 'n1', uid: 'node-uid-1', resourceVersion: h.cluster.nextRv() },
      spec: {
        providerID:
          'azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/n1',
      },
    });
    await h.settle();
    expect(dynamicContainers(h.cluster.nncs.get('n1')!)).to.have.length(1);
    await h.fulfiller.stop();
  });

  it('an invalid spec changes nothing and raises one Warning', async () => {
    const h = start();
    h.cluster.setSpec('n1', { requestedIPCount: 4 });
    await h.settle();
    const before = structuredClone(h.cluster.nncs.get('n1')!.status);
    h.cluster.setSpec('n1', { requestedIPCount: -3 } as never);
    await h.settle();
    h.fulfiller.resync();
    await h.settle();
    expect(h.cluster.nncs.get('n1')!.status).to.deep.equal(before);
    const warnings = h.events.filter((e) => e.details.reason === 'InvalidSpec');
    expect(warnings).to.have.length(1);
    expect(warnings[0]!.details.message).to.match(/requestedIPCount/);
    expect(warnings[0]!.involved).to.include({
      kind: 'NodeNetworkConfig',
      name: 'n1',
      uid: 'uid-n1',
    });
    await h.fulfiller.stop();
  });

  it('a deleted Node takes its NNC and gives its addresses back once its quarantine is over', async () => {
    const h = start({ quarantineMs: 30_000 });
    h.cluster.setSpec('n1', { requestedIPCount: 10 });
    await h.settle();
    expect(h.backend.pool.inUse).to.equal(11);
    h.cluster.deleteNode('n1');
    await h.settle();
    // Terminating, its finalizer keeps it (and its addresses) for the grace.
    expect(h.cluster.deletes).to.equal(1);
    expect(h.cluster.nncs.get('n1')?.metadata.deletionTimestamp).to.be.a('string');
    expect(h.backend.pool.inUse).to.equal(11);
    await h.clock.advance(30_000);
    await h.settle();
    expect(h.cluster.nncs.has('n1')).to.equal(false);
    expect(h.backend.pool.inUse).to.equal(0);
    await h.fulfiller.stop();
  });

  it('an NNC deleted under a live Node is recreated with the same ids and addresses', async () => {
    const h = start();
    h.cluster.setSpec('n1', { requestedIPCount: 10 });
    await h.settle();
    const before = structuredClone(dynamicContainers(h.cluster.nncs.get('n1')!));
    h.cluster.delete('n1');
    await h.settle();
    const after = h.cluster.nncs.get('n1')!;
    expect(after.metadata.uid).to.not.equal('uid-n1');
    expect(dynamicContainers(after)).to.deep.equal(before);
    expect(h.backend.pool.inUse).to.equal(11);
    expect(h.capture.find('node network config recreated')).to.have.length(1);
    await h.fulfiller.stop();
  });

  it('property: any sequence of specs and failures never shares an address and converges', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            node: fc.constantFrom('a', 'b', 'c'),
            request: fc.integer({ min: 0, max: 30 }),
            release: fc.nat(10),
            fail: fc.constantFrom(undefined, 409, 500, 0),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (steps) => {
          const h = start({ subnet: '10.7.0.0/26', exhaustionThreshold: 4 });
          for (const s of steps) {
            const ids = h.cluster.nncs.has(s.node)
              ? assignments(h.cluster, s.node).map((a) => a.name)
              : [];
            if (s.fail !== undefined) h.cluster.failWrites.push(s.fail);
            h.cluster.setSpec(s.node, {
              requestedIPCount: s.request,
              ipsNotInUse: ids.slice(0, s.release),
            });
            await h.clock.advance(50);
            expectNoSharing(h.cluster, '10.7.0.0/26');
          }
          await h.settle();
          // A 500 proves nothing: its claims stay until the request timeout is over.
          await h.clock.advance(UNANSWERED_WRITE_MS);
          h.fulfiller.resync();
          await h.settle();
          expectNoSharing(h.cluster, '10.7.0.0/26');
          expect(h.backend.pool.inUse).to.equal(h.cluster.holders().size);
          let short = false;
          for (const [name, nnc] of h.cluster.nncs) {
            const have = assignments(h.cluster, name).length;
            const wanted = nnc.spec?.requestedIPCount ?? 0;
            const listed = new Set(nnc.spec?.ipsNotInUse ?? []);
            expect(assignments(h.cluster, name).some((a) => listed.has(a.name))).to.equal(false);
            if (have < wanted) short = true;
          }
          if (short) expect(h.backend.pool.free).to.equal(0);
          await h.fulfiller.stop();
        },
      ),
      { numRuns: 40 },
    );
  });
});
