// The Azure backend on the strict emulator (real SDK, HTTP): which NIC takes
// a node's pod IPs in each layout, a node that fits neither, the NIC rules
// (ASGs, primary kept), Azure's caps, and reads refused by RBAC.
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { AzureBackend } from '../../src/azure/backend.ts';
import { ArmMetrics } from '../../src/azure/metrics.ts';
import { sdkNicApi } from '../../src/azure/nic-api.ts';
import { NodeSetupError } from '../../src/fulfiller/backend.ts';
import type { HeldContainer } from '../../src/fulfiller/backend.ts';
import type { ArmObject } from '../../harness/azure-emulator/nic-put.ts';
import { addNodes, clientFor, RG, startRig, SUB } from './helpers.ts';
import type { Rig } from './helpers.ts';

const ASG = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/applicationSecurityGroups/nodes`;

function backendFor(rig: Rig, registry?: Registry) {
  const metrics = registry ? new ArmMetrics(registry) : undefined;
  const client = clientFor(rig, metrics ? { metrics } : {});
  return new AzureBackend({
    api: sdkNicApi(client, RG, 10),
    podSubnetId: rig.podSubnetId,
    ...(metrics ? { metrics } : {}),
  });
}

const configs = (nic: ArmObject | undefined) =>
  (nic?.properties?.ipConfigurations as ArmObject[] | undefined) ?? [];

describe('Azure backend: layouts and NIC rules on the strict emulator', function () {
  this.timeout(30_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  for (const layout of ['node-subnet', 'pod-nic'] as const) {
    it(`${layout} layout: pod IPs on the NIC in the pod subnet, with the primary's ASGs`, async () => {
      rig = await startRig();
      const vm = rig.em.network.addVm({
        resourceGroup: RG,
        name: 'vm-0',
        ...(layout === 'pod-nic'
          ? { subnetId: rig.nodeSubnetId, podNicSubnetId: rig.podSubnetId }
          : { subnetId: rig.podSubnetId }),
        asgIds: [ASG],
      });
      const backend = backendFor(rig);
      await backend.start();
      const { held } = await backend.applyNic(
        { name: 'vm-0', providerID: vm.providerID },
        { add: 8, remove: [] },
      );
      expect(held.ipAssignments).to.have.length(8);
      expect(held.nodeIP).to.equal(layout === 'pod-nic' ? '10.224.0.4' : '10.240.0.4');
      const nic = rig.em.network.getNic(RG, vm.nicName);
      expect(configs(nic)).to.have.length(10);
      for (const c of configs(nic)) {
        expect((c.properties!.subnet as { id: string }).id).to.equal(rig.podSubnetId);
        expect(c.properties!.applicationSecurityGroups).to.deep.equal([{ id: ASG }]);
      }
      expect(configs(nic)[0]).to.deep.include({ name: 'ipconfig1' });
      if (layout === 'pod-nic') {
        expect(configs(rig.em.network.getNic(RG, vm.primaryNicName))).to.have.length(1);
      }
      await backend.releaseAll({ name: 'vm-0', providerID: vm.providerID }, []);
      expect(configs(rig.em.network.getNic(RG, vm.nicName))).to.have.length(1);
    });
  }

  it("node subnet layout without --pod-subnet-id: pod IPs in each NIC's own subnet, one subnet entry each, found again at start", async () => {
    rig = await startRig();
    const a = rig.em.network.addVm({ resourceGroup: RG, name: 'a', subnetId: rig.nodeSubnetId });
    const b = rig.em.network.addVm({ resourceGroup: RG, name: 'b', subnetId: rig.podSubnetId });
    // A second NIC does not matter here: the VM's primary NIC takes the pod IPs.
    const c = rig.em.network.addVm({
      resourceGroup: RG,
      name: 'c',
      subnetId: rig.nodeSubnetId,
      podNicSubnetId: rig.podSubnetId,
    });
    const api = () => sdkNicApi(clientFor(rig), RG, 10);
    const backend = new AzureBackend({ api: api() });
    await backend.start();
    expect(backend.subnets()).to.deep.equal([]);
    const held = new Map<string, HeldContainer>();
    for (const vm of [a, b, c]) {
      const name = vm.providerID.split('/').pop()!;
      const r = await backend.applyNic({ name, providerID: vm.providerID }, { add: 3, remove: [] });
      held.set(name, r.held);
    }
    expect(held.get('a')).to.include({ subnetName: 'nodes', subnetAddressSpace: '10.224.0.0/16' });
    expect(held.get('b')).to.include({ subnetName: 'pods', subnetAddressSpace: '10.240.0.0/16' });
    expect(held.get('c')).to.include({ subnetName: 'nodes', nodeIP: '10.224.0.5' });
    for (const [name, h] of held) {
      const ips = [h.primaryIP, ...h.ipAssignments.map((x) => x.ip)];
      const prefix = h.subnetName === 'nodes' ? '10.224.' : '10.240.';
      expect(
        ips.every((ip) => ip.startsWith(prefix)),
        name,
      ).to.equal(true);
    }
    expect(configs(rig.em.network.getNic(RG, c.primaryNicName))).to.have.length(5);
    expect(configs(rig.em.network.getNic(RG, c.nicName))).to.have.length(1);
    const free = (n: string) => backend.subnets().find((x) => x.name === n)?.free;
    expect(backend.subnets().map((x) => x.name)).to.have.members(['nodes', 'pods']);
    // /16: 65,531 usable; the NICs' own (a, c in nodes; b, c's second in pods) and 4 each.
    expect(free('nodes')).to.equal(65_531 - 2 - 8);
    expect(free('pods')).to.equal(65_531 - 2 - 4);
    // A fresh backend (a restart) knows both subnets before any round: its NICs hold NCs in them.
    const again = new AzureBackend({ api: api() });
    await again.start();
    expect(again.subnets().map((x) => x.name)).to.have.members(['nodes', 'pods']);
    // Release takes them back from each NIC's own subnet.
    await again.releaseAll({ name: 'a', providerID: a.providerID }, []);
    expect(configs(rig.em.network.getNic(RG, a.nicName))).to.have.length(1);
  });

  it('a node whose VM has no NIC in the pod subnet: NicNotInPodSubnet naming NIC and subnets, no PUT, no re-list within a minute', async () => {
    rig = await startRig();
    const vm = rig.em.network.addVm({ resourceGroup: RG, name: 'odd', subnetId: rig.nodeSubnetId });
    const backend = backendFor(rig);
    await backend.start();
    const node = { name: 'odd', providerID: vm.providerID };
    for (let i = 0; i < 3; i++) {
      const err = await backend.applyNic(node, { add: 4, remove: [] }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(NodeSetupError).and.include({ reason: 'NicNotInPodSubnet' });
      expect((err as Error).message).to.include('NIC odd-nic is in subnet nodes');
      expect((err as Error).message).to.include('pod subnet pods');
    }
    expect(rig.em.count('NetworkInterfaces.CreateOrUpdate')).to.equal(0);
    expect(rig.em.count('NetworkInterfaces.List')).to.equal(1);
    expect(backend.needsRound(node, [])).to.equal(false);
  });

  it('a node without a providerID, or with one that names no Azure VM, waits for a change (no backoff retry), no ARM call', async () => {
    rig = await startRig();
    const backend = backendFor(rig);
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'NoProviderID'],
      ['aws:///eu-west-1a/i-0123456789', 'BadProviderID'],
      [
        `azure:///subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/disks/d`,
        'BadProviderID',
      ],
    ];
    for (const [providerID, reason] of cases) {
      const err = await backend
        .applyNic({ name: 'n', ...(providerID ? { providerID } : {}) }, { add: 2, remove: [] })
        .catch((e: unknown) => e);
      expect(err, providerID)
        .to.be.instanceOf(NodeSetupError)
        .and.include({ reason, waitsForChange: true });
    }
    expect(rig.em.requests).to.deep.equal([]);
  });

  it('stops at the per-VM cap: an IpConfigurationLimit error and the metric, no failing PUT', async () => {
    rig = await startRig({ perVmCap: 256 });
    const [vm] = addNodes(rig, 1); // pod NIC layout: the primary NIC holds 1 of the VM's 256
    const registry = new Registry();
    const backend = backendFor(rig, registry);
    const node = { name: 'node-0', providerID: vm!.providerID };
    const first = await backend.applyNic(node, { add: 300, remove: [] });
    // 256 − 1 (primary NIC) − 1 (pod NIC's own) − 1 (NC primary) = 253.
    expect(first.held.ipAssignments).to.have.length(253);
    const puts = rig.em.count('NetworkInterfaces.CreateOrUpdate');
    const err = await backend
      .applyNic(node, {
        container: {
          id: 'nc',
          primaryIP: first.held.primaryIP,
          ipAssignments: first.held.ipAssignments,
        },
        add: 5,
        remove: [],
      })
      .catch((e: unknown) => e);
    expect(err).to.be.instanceOf(NodeSetupError).and.include({ reason: 'IpConfigurationLimit' });
    expect((err as Error).message).to.match(/limit per VM/);
    expect(rig.em.count('NetworkInterfaces.CreateOrUpdate')).to.equal(puts);
    expect(await registry.metrics()).to.match(
      /pool_monitor_arm_limit_reached_total\{limit="vm"\} 1/,
    );
  });

  it("the virtual network's cap: counted, the round returns short, no retry of the additions", async () => {
    rig = await startRig({ perVnetCap: 12 });
    const [vm] = addNodes(rig, 1); // 2 addresses in the VNet
    const registry = new Registry();
    const backend = backendFor(rig, registry);
    await backend.start();
    const node = { name: 'node-0', providerID: vm!.providerID };
    const r = await backend.applyNic(node, { add: 4, remove: [] });
    expect(r.held.ipAssignments).to.have.length(4);
    const more = await backend.applyNic(node, {
      container: { id: 'nc', primaryIP: r.held.primaryIP, ipAssignments: r.held.ipAssignments },
      add: 10,
      remove: [],
    });
    expect(more.short).to.equal(true);
    expect(more.held.ipAssignments).to.have.length(4);
    const refused = rig.em.requests.filter(
      (q) => q.operation === 'NetworkInterfaces.CreateOrUpdate' && q.status === 400,
    );
    expect(refused).to.have.length(1);
    expect(await registry.metrics()).to.match(
      /pool_monitor_arm_limit_reached_total\{limit="vnet"\} 1/,
    );
  });

  it('starts when RBAC refuses the usage read (403): counted, the CSS from the prefix and SubnetIsFull', async () => {
    const sub = `/subscriptions/${SUB}/resourceGroups/${RG}`;
    rig = await startRig({
      podPrefix: '10.240.0.0/27',
      roleAssignments: [
        {
          scope: sub,
          actions: [
            'Microsoft.Network/networkInterfaces/read',
            'Microsoft.Network/networkInterfaces/write',
            'Microsoft.Network/locations/operations/read',
            'Microsoft.Network/virtualNetworks/subnets/read',
            'Microsoft.Network/virtualNetworks/subnets/join/action',
          ],
        },
      ],
    });
    const [vm] = addNodes(rig, 1);
    const registry = new Registry();
    const backend = backendFor(rig, registry);
    await backend.start();
    expect(backend.subnets()).to.deep.equal([
      {
        name: 'pods',
        family: 4,
        cidr: '10.240.0.0/27',
        defaultGateway: '10.240.0.1',
        capacity: 27,
        free: 27,
        armSubnet: { name: 'pods', id: rig.podSubnetId },
      },
    ]);
    expect(await registry.metrics()).to.match(
      /pool_monitor_arm_forbidden_total\{operation="VirtualNetworks.ListUsage"\} 1/,
    );
    const r = await backend.applyNic(
      { name: 'node-0', providerID: vm!.providerID },
      { add: 30, remove: [] },
    );
    // 27 − the pod NIC's own = 26 free: 31 refused, then half of 30 fits.
    expect(r.short).to.equal(true);
    expect(r.held.ipAssignments).to.have.length(15);
    expect(backend.subnets()[0]).to.include({ free: 0 });
  });

  it('a write ARM refuses (no subnets/join/action on the pod subnet): ArmForbidden, naming the action, nothing written', async () => {
    const sub = `/subscriptions/${SUB}/resourceGroups/${RG}`;
    rig = await startRig({
      roleAssignments: [
        {
          scope: sub,
          actions: [
            'Microsoft.Network/networkInterfaces/read',
            'Microsoft.Network/networkInterfaces/write',
            'Microsoft.Network/virtualNetworks/read',
            'Microsoft.Network/virtualNetworks/subnets/read',
          ],
        },
      ],
    });
    const [vm] = addNodes(rig, 1);
    const registry = new Registry();
    const backend = backendFor(rig, registry);
    await backend.start();
    const err = await backend
      .applyNic({ name: 'node-0', providerID: vm!.providerID }, { add: 2, remove: [] })
      .catch((e: unknown) => e);
    expect(err).to.be.instanceOf(NodeSetupError).and.include({ reason: 'ArmForbidden' });
    expect((err as Error).message).to.include('subnets/join/action');
    expect(configs(rig.em.network.getNic(RG, vm!.nicName))).to.have.length(1);
    expect(await registry.metrics()).to.match(
      /pool_monitor_arm_forbidden_total\{operation="NetworkInterfaces.CreateOrUpdate"\} 1/,
    );
  });
});
