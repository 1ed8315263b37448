// The ARM emulator is as strict as ARM: each rule of its conformance table
// (harness/azure-emulator/README.md), through the real @azure/arm-network client.
import { expect } from 'chai';
import type { NetworkInterface } from '@azure/arm-network';
import { readdirSync, readFileSync } from 'node:fs';
import { isPublished, linkedActionFor } from '../../harness/azure-emulator/authorization.ts';
import { nicKey } from '../../harness/azure-emulator/nic-model.ts';
import { addNodes, clientFor, RG, startRig } from './helpers.ts';
import type { Rig } from './helpers.ts';
import { failure, secondary, tryPut, withConfigs } from './nic-writes.ts';

const ASG = `/subscriptions/s/resourceGroups/${RG}/providers/Microsoft.Network/applicationSecurityGroups/asg`;

/** The NIC with Dynamic secondaries `names` in `subnetId`, in the ASGs `asgs` when given. */
const plus = (
  nic: NetworkInterface,
  subnetId: string,
  names: string[],
  asgs?: string[],
): NetworkInterface =>
  withConfigs(
    nic,
    ...names.map((name) =>
      secondary(
        name,
        subnetId,
        asgs ? { applicationSecurityGroups: asgs.map((id) => ({ id })) } : {},
      ),
    ),
  );

describe('ARM emulator: the rules ARM keeps (real SDK)', () => {
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('refuses ipConfigurations in two subnets on one NIC, and changes nothing', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1, 'node', 'pod-nic');
    const client = clientFor(rig);
    const primaryNic = await client.networkInterfaces.get(RG, vm!.primaryNicName);
    const err = await tryPut(client, vm!.primaryNicName, plus(primaryNic, rig.podSubnetId, ['x']));
    expect(err).to.include({ statusCode: 400 });
    expect(err.message).to.equal('IPConfigurations on a Nic cannot belong to different subnets.');
    expect((await client.networkInterfaces.get(RG, vm!.primaryNicName)).etag).to.equal(
      primaryNic.etag,
    );
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse).to.equal(1);
  });

  it('refuses ipConfigurations with other application security groups than the rest', async () => {
    rig = await startRig();
    const vm = rig.em.network.addVm({
      resourceGroup: RG,
      name: 'vm',
      subnetId: rig.podSubnetId,
      asgIds: [ASG],
    });
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm.nicName);
    const err = await tryPut(client, vm.nicName, plus(nic, rig.podSubnetId, ['x']));
    expect(err).to.include({
      statusCode: 400,
      code: 'AllIpConfigurationsOnANicMustBelongToTheSameApplicationSecurityGroups',
    });
    const ok = await client.networkInterfaces.createOrUpdate(
      RG,
      vm.nicName,
      plus(nic, rig.podSubnetId, ['x'], [ASG]),
    );
    expect(ok.ipConfigurations).to.have.length(2);
  });

  it('refuses deleting or renaming the primary ipConfiguration', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const renamed: NetworkInterface = {
      ...nic,
      ipConfigurations: nic.ipConfigurations!.map((c) => ({ ...c, name: 'renamed' })),
    };
    const err = await tryPut(client, vm!.nicName, renamed);
    expect(err).to.include({ statusCode: 400, code: 'IpConfigDeleteNotSupported' });
    expect(err.message).to.match(/ipconfig1 cannot be deleted/);
  });

  it('refuses more private addresses than the per-VM cap, counting the VM’s other NICs', async () => {
    rig = await startRig({ perVmCap: 4 });
    const [vm] = addNodes(rig, 1, 'node', 'pod-nic'); // 2 NICs, one address each
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const err = await tryPut(client, vm!.nicName, plus(nic, rig.podSubnetId, ['a', 'b', 'c']));
    expect(err).to.include({
      statusCode: 400,
      code: 'PrivateIPAddressesPerVirtualMachineLimitReached',
    });
    const fits = await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      plus(nic, rig.podSubnetId, ['a', 'b']),
    );
    expect(fits.ipConfigurations).to.have.length(3);
  });

  it('refuses more private addresses than the virtual network’s cap', async () => {
    rig = await startRig({ perVnetCap: 5 });
    const [vm] = addNodes(rig, 1, 'node', 'pod-nic'); // 2 addresses in the VNet
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const err = await tryPut(client, vm!.nicName, plus(nic, rig.podSubnetId, ['a', 'b', 'c', 'd']));
    expect(err).to.include({
      statusCode: 400,
      code: 'PrivateIPAddressesPerVirtualNetworkLimitReached',
    });
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse).to.equal(1);
  });

  it('answers 403 AuthorizationFailed outside the role assignments, LinkedAuthorizationFailed for a subnet it may not join', async () => {
    const rg = `/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/${RG}`;
    rig = await startRig({
      roleAssignments: [
        {
          scope: rg,
          actions: [
            'Microsoft.Network/networkInterfaces/read',
            'Microsoft.Network/networkInterfaces/write',
          ],
        },
      ],
    });
    const [vm] = addNodes(rig, 1);
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const usage = await failure(
      (async () => {
        for await (const u of client.virtualNetworks.listUsage(RG, 'vnet')) void u;
      })(),
    );
    expect(usage).to.include({ statusCode: 403, code: 'AuthorizationFailed' });
    const subnet = await failure(client.subnets.get(RG, 'vnet', 'pods'));
    expect(subnet).to.include({ statusCode: 403, code: 'AuthorizationFailed' });
    expect(subnet.message).to.include(
      "does not have authorization to perform action 'Microsoft.Network/virtualNetworks/subnets/read'",
    );
    const put = await tryPut(client, vm!.nicName, plus(nic, rig.podSubnetId, ['x']));
    expect(put).to.include({ statusCode: 403, code: 'LinkedAuthorizationFailed' });
    expect(put.message).to.include('subnets/join/action');
    rig.em.roleAssignments!.push({
      scope: rig.podSubnetId,
      actions: ['Microsoft.Network/virtualNetworks/subnets/join/action'],
    });
    // The write is accepted; following its operation is a read at the NIC's
    // resource group, which the NIC write alone does not grant.
    const poll = await tryPut(client, vm!.nicName, plus(nic, rig.podSubnetId, ['x']));
    expect(poll).to.include({ statusCode: 403, code: 'AuthorizationFailed' });
    expect(poll.message).to.include(
      `perform action 'Microsoft.Network/locations/operations/read' over scope '${rg}'`,
    );
    // At the NIC itself it is not enough: the status URL is not under the NIC.
    rig.em.roleAssignments!.push({
      scope: `${rg}/providers/Microsoft.Network/networkInterfaces/${vm!.nicName}`,
      actions: ['Microsoft.Network/locations/operations/read'],
    });
    const again = await tryPut(client, vm!.nicName, plus(nic, rig.podSubnetId, ['y']));
    expect(again).to.include({ statusCode: 403, code: 'AuthorizationFailed' });
    rig.em.roleAssignments!.push({
      scope: rg,
      actions: ['Microsoft.Network/locations/operations/read'],
    });
    const ok = await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      plus(nic, rig.podSubnetId, ['z']),
    );
    expect(ok.ipConfigurations).to.have.length(2);
  });

  it("checks linked authorization on every resource a NIC PUT references (LB pool and NAT rule, application gateway pool, NSG, public IP, ASG, subnet), in ARM's words", async () => {
    const rg = `/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/${RG}`;
    const net = `${rg}/providers/Microsoft.Network`;
    const pool = `${net}/loadBalancers/kubernetes/backendAddressPools/kubernetes`;
    const nat = `${net}/loadBalancers/kubernetes/inboundNatRules/ssh-n`;
    const agPool = `${net}/applicationGateways/ingress/backendAddressPools/web`;
    const nsg = `${net}/networkSecurityGroups/nodes-nsg`;
    const pip = `${net}/publicIPAddresses/n-pip`;
    const asg = `${net}/applicationSecurityGroups/nodes`;
    const base = [
      'Microsoft.Network/networkInterfaces/read',
      'Microsoft.Network/networkInterfaces/write',
      'Microsoft.Network/locations/operations/read',
      'Microsoft.Network/virtualNetworks/subnets/join/action',
    ];
    rig = await startRig({ roleAssignments: [{ scope: rg, actions: [...base] }] });
    const vm = rig.em.network.addVm({
      resourceGroup: RG,
      name: 'n',
      subnetId: rig.podSubnetId,
      asgIds: [asg],
      nicProperties: { networkSecurityGroup: { id: nsg } },
      primaryConfigProperties: {
        loadBalancerBackendAddressPools: [{ id: pool }],
        loadBalancerInboundNatRules: [{ id: nat }],
        applicationGatewayBackendAddressPools: [{ id: agPool }],
        publicIPAddress: { id: pip },
      },
    });
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm.nicName);
    const linked = [
      ['Microsoft.Network/loadBalancers/backendAddressPools/join/action', pool],
      ['Microsoft.Network/loadBalancers/inboundNatRules/join/action', nat],
      ['Microsoft.Network/applicationGateways/backendAddressPools/join/action', agPool],
      ['Microsoft.Network/publicIPAddresses/join/action', pip],
      ['Microsoft.Network/applicationSecurityGroups/joinIpConfiguration/action', asg],
      ['Microsoft.Network/networkSecurityGroups/join/action', nsg],
    ] as const;
    const put = await tryPut(client, vm.nicName, plus(nic, rig.podSubnetId, ['x'], [asg]));
    expect(put).to.include({ statusCode: 403, code: 'LinkedAuthorizationFailed' });
    // Every action missing, in the order the body names them, "(respectively)".
    expect(put.message).to.match(
      /^The client '[^']+' with object id '[^']+' has permission to perform action 'Microsoft\.Network\/networkInterfaces\/write' on scope '[^']+\/networkInterfaces\/n-nic'; however, it does not have permission to perform action\(s\) '[^']+' on the linked scope\(s\) '[^']+' \(respectively\) or the linked scope\(s\) are invalid\.$/,
    );
    for (const [action, scope] of linked) {
      expect(put.message).to.include(action);
      expect(put.message).to.include(scope);
    }
    // Granted one by one: refused until the last, then written.
    for (const [i, [action]] of linked.entries()) {
      rig.em.roleAssignments!.push({ scope: rg, actions: [action] });
      const r = await tryPut(client, vm.nicName, plus(nic, rig.podSubnetId, ['x'], [asg]));
      if (i < linked.length - 1) {
        expect(r, action).to.include({ statusCode: 403, code: 'LinkedAuthorizationFailed' });
        expect(r.message).to.not.include(action);
      } else expect(r, action).to.deep.equal({});
    }
    // One action left out: ARM's singular form.
    rig.em.roleAssignments = [
      { scope: rg, actions: [...base, ...linked.slice(1).map(([a]) => a)] },
    ];
    const one = await tryPut(client, vm.nicName, plus(nic, rig.podSubnetId, ['y'], [asg]));
    expect(one.message).to.include(
      `; however, it does not have permission to perform action '${linked[0][0]}' on the linked scope(s) '${pool}' or the linked scope(s) are invalid.`,
    );
  });

  it("refuses a Static address another NIC holds, a reserved one and one outside the subnet, in ARM's words", async () => {
    rig = await startRig();
    const [a, b] = addNodes(rig, 2);
    const client = clientFor(rig);
    const nicA = await client.networkInterfaces.get(RG, a!.nicName);
    const nicB = await client.networkInterfaces.get(RG, b!.nicName);
    const takenIp = nicA.ipConfigurations![0]!.privateIPAddress!;
    const staticOn = (nic: NetworkInterface, ip: string): NetworkInterface =>
      withConfigs(
        nic,
        secondary('restored', rig.podSubnetId, {
          privateIPAllocationMethod: 'Static',
          privateIPAddress: ip,
        }),
      );
    const taken = await tryPut(client, b!.nicName, staticOn(nicB, takenIp));
    expect(taken).to.include({ statusCode: 400, code: 'PrivateIPAddressIsAllocated' });
    expect(taken.message).to.equal(
      `IP configuration ${nicB.id}/ipConfigurations/restored is using the private IP address ${takenIp} which is already allocated to resource ${nicA.id}.`,
    );
    const reserved = await tryPut(client, b!.nicName, staticOn(nicB, '10.240.0.3'));
    expect(reserved).to.include({ statusCode: 400, code: 'PrivateIPAddressInReservedRange' });
    expect(reserved.message).to.include('10.240.0.3');
    const outside = await tryPut(client, b!.nicName, staticOn(nicB, '10.9.0.7'));
    expect(outside).to.include({ statusCode: 400, code: 'PrivateIPAddressNotInSubnet' });
    // Nothing changed.
    const after = await client.networkInterfaces.get(RG, b!.nicName);
    expect(after.etag).to.equal(nicB.etag);
  });

  it("answers a write to a NIC another operation is updating 429 RetryableError, with ARM's detail and Retry-After", async () => {
    rig = await startRig({ quota: false });
    const [vm] = addNodes(rig, 1);
    const client = clientFor(rig, { retry: { maxRetries: 0 } });
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    expect(rig.em.otherWriters.occupy(nicKey(RG, vm!.nicName), 5_000)).to.equal(true);
    let retryAfter: string | undefined;
    let body: unknown;
    const busy = await tryPut(
      client,
      vm!.nicName,
      { ...nic, tags: { a: 'b' } },
      {
        onResponse: (r) => {
          retryAfter = r.headers.get('retry-after');
          body = r.parsedBody;
        },
      },
    );
    expect(busy).to.include({ statusCode: 429, code: 'RetryableError' });
    expect(Number(retryAfter)).to.be.within(4, 5);
    const detail = (body as { error: { details: Array<{ code: string; message: string }> } }).error
      .details[0]!;
    expect(detail.code).to.equal('RetryableErrorDueToAnotherOperation');
    expect(detail.message).to.match(
      /^Operation PutNetworkInterfaceOperation \([0-9a-f-]{36}\) is updating resource [0-9a-f-]{36}\. The call can be retried in [45] seconds\.$/,
    );
  });

  it("takes every action from Azure's published operations list, none from the product", () => {
    const sub = '/subscriptions/s/resourceGroups/g/providers';
    const cases: Array<[string, string]> = [
      [
        `${sub}/Microsoft.Network/virtualNetworks/v/subnets/pods`,
        'Microsoft.Network/virtualNetworks/subnets/join/action',
      ],
      [
        `${sub}/Microsoft.Network/loadBalancers/lb/inboundNatRules/r`,
        'Microsoft.Network/loadBalancers/inboundNatRules/join/action',
      ],
      [
        `${sub}/Microsoft.Network/loadBalancers/lb/inboundNatPools/p`,
        'Microsoft.Network/loadBalancers/inboundNatPools/join/action',
      ],
      [
        `${sub}/Microsoft.Network/applicationGateways/ag/backendAddressPools/p`,
        'Microsoft.Network/applicationGateways/backendAddressPools/join/action',
      ],
      [
        `${sub}/Microsoft.Network/applicationSecurityGroups/a`,
        'Microsoft.Network/applicationSecurityGroups/joinIpConfiguration/action',
      ],
      [
        `${sub}/Microsoft.ManagedIdentity/userAssignedIdentities/i`,
        'Microsoft.ManagedIdentity/userAssignedIdentities/assign/action',
      ],
      [`${sub}/Microsoft.KeyVault/vaults/kv`, 'Microsoft.KeyVault/vaults/deploy/action'],
      [
        `${sub}/Microsoft.Compute/galleries/g/images/i/versions/1`,
        'Microsoft.Compute/galleries/images/versions/read',
      ],
    ];
    for (const [id, action] of cases) {
      expect(linkedActionFor(id), id).to.equal(action);
      expect(isPublished(action), action).to.equal(true);
    }
    // The emulator's sources import nothing of the product (the lint rule keeps it so).
    const dir = new URL('../../harness/azure-emulator/', import.meta.url);
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
      expect(readFileSync(new URL(f, dir), 'utf8'), f).to.not.match(/from '[^']*\/src\//);
    }
  });

  it('answers polls InProgress with Retry-After until the operation’s time (polled at it), says what quota is left, 429 when it is spent', async () => {
    rig = await startRig({
      operationMs: 1000,
      quota: { reads: { size: 6, perSecond: 0.01 }, writes: { size: 3, perSecond: 1 } },
    });
    const [vm] = addNodes(rig, 1);
    const client = clientFor(rig, { retry: { maxRetries: 0 } });
    const seen: Array<Record<string, string | undefined>> = [];
    const nic = await client.networkInterfaces.get(RG, vm!.nicName, {
      onResponse: (r) =>
        seen.push({ reads: r.headers.get('x-ms-ratelimit-remaining-subscription-reads') }),
    });
    expect(seen[0]).to.deep.equal({ reads: '5' });
    const began = Date.now();
    await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      plus(nic, rig.podSubnetId, ['x']),
    );
    // The operation takes its second: its first poll waits for the PUT's
    // Retry-After (our pacing policy; the SDK alone would poll at once), and
    // so finds it done: one poll, one read.
    expect(Date.now() - began).to.be.at.least(950);
    const put = rig.em.requests.find((r) => r.operation === 'NetworkInterfaces.CreateOrUpdate')!;
    const polls = rig.em.requests.filter((r) => r.operation === 'AsyncOperation.Get');
    expect(polls[0]!.at - put.at).to.be.at.least(950);
    for (let i = 1; i < polls.length; i++) {
      expect(polls[i]!.at - polls[i - 1]!.at).to.be.at.least(950);
    }
    // Reads spent (6 in the bucket, one back every 100 s): a 429 with Retry-After.
    const spent = await failure(
      (async () => {
        for (let i = 0; i < 10; i++) await client.networkInterfaces.get(RG, vm!.nicName);
      })(),
    );
    expect(spent).to.include({ statusCode: 429 });
    expect(rig.em.quota!.throttled).to.be.at.least(1);
  });
});
