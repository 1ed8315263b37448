// The Azure backend on a dual-stack pod subnet, through the real SDK against
// the ARM emulator: which families it serves, each family's container from
// the one NIC write, what ARM refuses (the documented one IPv6 address per
// NIC: then IPv4 alone), another writer's removals put back per family (IPv6 Static too),
// a SubnetIsFull of one family cutting that family alone, needsRound and the
// release of a deleted node, both families.
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { AzureBackend } from '../../src/azure/backend.ts';
import { ArmMetrics } from '../../src/azure/metrics.ts';
import { sdkNicApi } from '../../src/azure/nic-api.ts';
import type { FamilyChange, HeldContainer, NodeRef } from '../../src/fulfiller/backend.ts';
import { NodeSetupError } from '../../src/fulfiller/backend.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import type { ArmObject } from '../../harness/azure-emulator/arm-object.ts';
import { nicKey } from '../../harness/azure-emulator/nic-model.ts';
import { addNodes, clientFor, RG, startRig } from './helpers.ts';
import type { Layout, Rig } from './helpers.ts';

const POD6 = 'fd00:10:240::/64';

function backendFor(
  rig: Rig,
  extra: Partial<ConstructorParameters<typeof AzureBackend>[0]> = {},
  registry?: Registry,
) {
  const metrics = registry ? new ArmMetrics(registry) : undefined;
  return new AzureBackend({
    api: sdkNicApi(clientFor(rig, metrics ? { metrics } : {}), RG, 10),
    podSubnetId: rig.podSubnetId,
    ...(metrics ? { metrics } : {}),
    ...extra,
  });
}

/** The containers a fulfiller would have written from a round's result (IPv4, IPv6). */
const asContainers = (held: HeldContainer[]): NetworkContainer[] =>
  held.map((h, i) => ({ id: `nc-${i}`, ...h }));

/** A round of both families: `add` each, releasing `remove`, from `containers`. */
const both = (
  add: number,
  containers: NetworkContainer[] = [],
  remove: Array<{ name: string; ip: string }> = [],
): { families: FamilyChange[] } => ({
  families: ([4, 6] as const).map((family, i) => ({
    family,
    ...(containers[i] ? { container: containers[i] } : {}),
    add,
    remove: remove.filter((r) => r.ip.includes(':') === (family === 6)),
  })),
});

const configs = (nic: ArmObject | undefined) =>
  ((nic?.properties?.ipConfigurations as ArmObject[] | undefined) ?? []).map((c) => ({
    name: String(c.name),
    ip: String(c.properties?.privateIPAddress),
    version: String(c.properties?.privateIPAddressVersion),
  }));

describe('Azure backend: a dual-stack pod subnet (real SDK, HTTP)', function () {
  this.timeout(30_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('serves the families of its pod subnet: IPv4 and IPv6 on a dual-stack one, IPv4 alone otherwise', async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    const dual = backendFor(rig);
    expect(dual.families()).to.deep.equal([4]); // nothing read yet
    await dual.start();
    expect(dual.families()).to.deep.equal([4, 6]);
    expect(dual.subnets().map((s) => [s.name, s.family, s.cidr, s.defaultGateway])).to.deep.equal([
      ['pods', 4, '10.240.0.0/16', '10.240.0.1'],
      ['pods-ipv6', 6, POD6, 'fd00:10:240::1'],
    ]);
    // The node subnet is IPv4 only.
    const single = backendFor(rig, { podSubnetId: rig.nodeSubnetId });
    await single.start();
    expect(single.families()).to.deep.equal([4]);
    // Without --pod-subnet-id, the families every subnet in use has: one of them IPv4 only.
    const [a] = addNodes(rig, 1, 'a', 'node-subnet');
    const [b] = addNodes(rig, 1, 'b', 'pod-nic');
    const mixed = backendFor(rig, { podSubnetId: undefined });
    await mixed.start();
    await mixed.apply(
      { name: 'a', providerID: a!.providerID },
      { families: [{ family: 4, add: 1, remove: [] }] },
    );
    expect(mixed.families()).to.deep.equal([4, 6]);
    const nodesNic = { name: 'b', providerID: b!.providerID };
    // b's own NIC (the VM's primary, in the node subnet) without --pod-subnet-id.
    await mixed.apply(nodesNic, { families: [{ family: 4, add: 1, remove: [] }] });
    expect(mixed.families()).to.deep.equal([4]);
    // Asked IPv6 on a subnet without an IPv6 prefix: said, nothing written.
    const err = await mixed.apply(nodesNic, both(1)).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(NodeSetupError).and.include({ reason: 'NoIPv6Prefix' });
  });

  for (const layout of ['pod-nic', 'node-subnet'] as Layout[]) {
    it(`${layout}: both families in ONE PUT, each container of its own NC primary and prefix`, async () => {
      rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
      const [vm] = addNodes(rig, 1, 'node', layout);
      const backend = backendFor(rig);
      await backend.start();
      const node: NodeRef = { name: 'node-0', providerID: vm!.providerID };
      const first = await backend.apply(node, both(8));
      expect(backend.stats.puts).to.equal(1);
      const [v4, v6] = first.held;
      expect(v4).to.include({ subnetName: 'pods', subnetAddressSpace: '10.240.0.0/16' });
      expect(v6).to.include({
        subnetName: 'pods-ipv6',
        subnetAddressSpace: POD6,
        defaultGateway: 'fd00:10:240::1',
        primaryIP: 'fd00:10:240::4',
        nodeIP: v4!.nodeIP,
      });
      expect(v6!.ipAssignments.map((a) => a.ip)).to.deep.equal(
        Array.from({ length: 8 }, (_, i) => `fd00:10:240::${(5 + i).toString(16)}`),
      );
      const onNic = configs(rig.em.network.getNic(RG, vm!.nicName));
      for (const a of v6!.ipAssignments) {
        expect(onNic).to.deep.include({ name: a.name, ip: a.ip, version: 'IPv6' });
      }
      for (const a of v4!.ipAssignments) {
        expect(onNic).to.deep.include({ name: a.name, ip: a.ip, version: 'IPv4' });
      }
      // Releases of both families and additions, one PUT more.
      const containers = asContainers(first.held);
      const remove = [...v4!.ipAssignments.slice(0, 2), ...v6!.ipAssignments.slice(0, 3)];
      const next = await backend.apply(node, {
        families: [
          { family: 4, container: containers[0]!, add: 2, remove: remove.slice(0, 2) },
          { family: 6, container: containers[1]!, add: 3, remove: remove.slice(2) },
        ],
      });
      expect(backend.stats.puts).to.equal(2);
      expect(next.held.map((h) => h.ipAssignments.length)).to.deep.equal([8, 8]);
      const names = configs(rig.em.network.getNic(RG, vm!.nicName)).map((c) => c.name);
      expect(names).to.not.include.members(remove.map((r) => r.name));
      // Nothing held that the containers do not list: no round needed.
      expect(backend.needsRound(node, asContainers(next.held))).to.equal(false);
      // An IPv6 address on the NIC its NNC does not list (a lost status write): a round.
      const partial = asContainers(next.held);
      partial[1] = { ...partial[1]!, ipAssignments: partial[1]!.ipAssignments!.slice(1) };
      expect(backend.needsRound(node, partial)).to.equal(true);
      // A deleted node: both families' addresses leave the NIC in one PUT.
      const inUse6 = rig.em.network.subnet(rig.podSubnetId)!.inUse6;
      expect(inUse6).to.equal(9);
      await backend.releaseAll({ name: 'node-0' }, asContainers(next.held));
      expect(backend.stats.puts).to.equal(3);
      expect(configs(rig.em.network.getNic(RG, vm!.nicName))).to.have.length(1);
      expect(rig.em.network.subnet(rig.podSubnetId)!.inUse6).to.equal(0);
    });
  }

  it('as Azure documents it (one IPv6 address per NIC): refused once, said, then IPv4 alone is served', async () => {
    rig = await startRig({ podPrefix6: POD6 }); // ipv6PerNic 'one', the emulator's default
    const [a, b] = addNodes(rig, 2, 'node', 'node-subnet');
    const registry = new Registry();
    const logs = new CaptureTransport();
    const backend = backendFor(
      rig,
      { logger: createLogger({ transports: [logs], level: 'info' }) },
      registry,
    );
    await backend.start();
    expect(backend.families()).to.deep.equal([4, 6]);
    const etag = rig.em.network.getNic(RG, a!.nicName)!.etag;
    const err = await backend
      .apply({ name: 'node-0', providerID: a!.providerID }, both(4))
      .catch((e: unknown) => e);
    expect(err).to.be.instanceOf(NodeSetupError).and.include({ reason: 'IPv6Refused' });
    expect((err as Error).message).to.include('Azure documents one private IPv6 address per NIC');
    expect(rig.em.network.getNic(RG, a!.nicName)!.etag).to.equal(etag);
    expect(await registry.metrics()).to.match(
      /pool_monitor_arm_limit_reached_total\{limit="ipv6"\} 1/,
    );
    // From now on IPv4 alone: both nodes are served, said once in the log.
    expect(backend.families()).to.deep.equal([4]);
    for (const [name, vm] of [
      ['node-0', a],
      ['node-1', b],
    ] as const) {
      const r = await backend.apply(
        { name, providerID: vm!.providerID },
        { families: [{ family: 4, add: 4, remove: [] }] },
      );
      expect(r.held[0]!.ipAssignments).to.have.length(4);
    }
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse6).to.equal(0);
    expect(logs.find('IPv6 pod addresses refused by ARM: serving IPv4 alone')).to.have.length(1);
  });

  it("another writer's removals are put back per family, IPv6 ones Static with their addresses", async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const backend = backendFor(rig, { auditMs: 0, minRelistMs: 0 });
    await backend.start();
    const node: NodeRef = { name: 'node-0', providerID: vm!.providerID };
    const first = await backend.apply(node, both(4));
    // cloud-provider-azure reads the NIC, we grow it, it writes back its read.
    const read = rig.em.otherWriters.staleRead(nicKey(RG, vm!.nicName))!;
    const grown = await backend.apply(node, {
      families: first.held.map((_, i) => ({
        family: ([4, 6] as const)[i]!,
        container: asContainers(first.held)[i]!,
        add: 4,
        remove: [],
      })),
    });
    expect(rig.em.otherWriters.staleWrite(read)).to.equal(8);
    const containers = asContainers(grown.held);
    // A list begun after our last write (a later millisecond) sees the removals.
    await new Promise((r) => setTimeout(r, 5));
    await backend.directory.relist();
    expect(backend.needsRound(node, containers)).to.equal(true);
    const back = await backend.apply(node, {
      families: ([4, 6] as const).map((family, i) => ({
        family,
        container: containers[i]!,
        add: 0,
        remove: [],
      })),
    });
    expect(back.lost ?? []).to.deep.equal([]);
    expect(back.held.map((h) => h.ipAssignments)).to.deep.equal(
      grown.held.map((h) => h.ipAssignments),
    );
    const restored = rig.em.otherWriters.removed;
    expect(restored).to.have.length(8);
    expect(restored.every((r) => r.restoredAt !== undefined)).to.equal(true);
    expect(restored.filter((r) => r.ip.includes(':'))).to.have.length(4);
    expect(backend.stats.restored).to.equal(8);
  });

  it('a SubnetIsFull of the IPv4 prefix cuts IPv4 alone: IPv6 is served in full, its CSS free', async () => {
    // /27: 27 usable IPv4 addresses; the NIC's own takes one.
    rig = await startRig({ podPrefix: '10.240.0.0/27', podPrefix6: POD6, ipv6PerNic: 'many' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const backend = backendFor(rig, { fullHoldMs: 60_000 });
    await backend.start();
    const r = await backend.apply({ name: 'node-0', providerID: vm!.providerID }, both(30));
    expect(r.short).to.equal(true);
    const [v4, v6] = r.held;
    expect(v4!.ipAssignments.length).to.be.below(26);
    expect(v6!.ipAssignments).to.have.length(30);
    const subnets = backend.subnets();
    expect(subnets.map((s) => [s.name, s.free === 0])).to.deep.equal([
      ['pods', true],
      ['pods-ipv6', false],
    ]);
    // A /64's 2^64 − 5 less 31 (as a number, what the CSS can carry).
    expect(subnets[1]!.free).to.be.above(2 ** 63);
  });
});
