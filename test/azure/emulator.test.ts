// The ARM emulator through the real @azure/arm-network client over HTTP:
// paging, ETags and If-Match, Azure-AsyncOperation, address assignment with
// Azure's reserved addresses, the 256 limit, SubnetIsFull both ways, the
// bearer-token check and injected faults.
import { expect } from 'chai';
import type { NetworkInterface } from '@azure/arm-network';
import { addNodes, clientFor, RG, startRig, staticToken } from './helpers.ts';
import type { Rig } from './helpers.ts';

function withConfigs(nic: NetworkInterface, subnetId: string, names: string[]): NetworkInterface {
  return {
    ...nic,
    ipConfigurations: [
      ...(nic.ipConfigurations ?? []),
      ...names.map((name) => ({
        name,
        privateIPAllocationMethod: 'Dynamic' as const,
        subnet: { id: subnetId },
        primary: false,
      })),
    ],
  };
}

describe('ARM emulator (through @azure/arm-network)', () => {
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('lists NICs page by page following nextLink', async () => {
    rig = await startRig({ pageSize: 2 });
    addNodes(rig, 5, 'node', 'node-subnet');
    const client = clientFor(rig);
    const names: string[] = [];
    for await (const nic of client.networkInterfaces.list(RG)) names.push(nic.name!);
    expect(names).to.have.length(5);
    expect(rig.em.count('NetworkInterfaces.List')).to.equal(3);
  });

  it('assigns Dynamic addresses after the four reserved ones and never the last', async () => {
    rig = await startRig({ podPrefix: '10.241.0.0/29' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet'); // its own address: 10.241.0.4
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const put = await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      withConfigs(nic, rig.podSubnetId, ['a', 'b']),
      { requestOptions: { headers: { 'if-match': nic.etag! } } },
    );
    const ips = put.ipConfigurations!.map((c) => c.privateIPAddress);
    expect(ips).to.deep.equal(['10.241.0.4', '10.241.0.5', '10.241.0.6']);
    // The LRO was followed: PUT, one poll, the final GET.
    expect(rig.em.requests.map((r) => r.operation)).to.deep.equal([
      'NetworkInterfaces.Get',
      'NetworkInterfaces.CreateOrUpdate',
      'AsyncOperation.Get',
      'NetworkInterfaces.Get',
    ]);
    // A /29 has 8 addresses, 5 reserved: a fourth does not fit.
    const again = await client.networkInterfaces.get(RG, vm!.nicName);
    const err = await client.networkInterfaces
      .createOrUpdate(RG, vm!.nicName, withConfigs(again, rig.podSubnetId, ['d']))
      .catch((e: unknown) => e as { statusCode?: number; code?: string });
    expect(err).to.include({ statusCode: 400, code: 'SubnetIsFull' });
  });

  it('answers 412 to a stale If-Match and keeps the NIC', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    rig.em.network.modifyNic(RG, vm!.nicName, (n) => {
      n.tags = { owner: 'someone-else' };
    });
    const err = await client.networkInterfaces
      .createOrUpdate(RG, vm!.nicName, withConfigs(nic, rig.podSubnetId, ['x']), {
        requestOptions: { headers: { 'if-match': nic.etag! } },
      })
      .catch((e: unknown) => e as { statusCode?: number });
    expect(err).to.include({ statusCode: 412 });
    const now = await client.networkInterfaces.get(RG, vm!.nicName);
    expect(now.ipConfigurations).to.have.length(1);
    expect(now.tags).to.deep.equal({ owner: 'someone-else' });
  });

  it('keeps read-only and untouched NIC fields across a PUT, refuses more than 256 ipConfigurations', async () => {
    rig = await startRig();
    const vm = rig.em.network.addVm({
      resourceGroup: RG,
      name: 'vm-x',
      subnetId: rig.nodeSubnetId,
      tags: { team: 'net' },
      nicProperties: {
        enableAcceleratedNetworking: true,
        dnsSettings: { dnsServers: ['10.0.0.10'] },
        networkSecurityGroup: {
          id: `/subscriptions/s/resourceGroups/${RG}/providers/Microsoft.Network/networkSecurityGroups/nsg`,
        },
      },
      primaryConfigProperties: {
        loadBalancerBackendAddressPools: [
          {
            id: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/loadBalancers/lb/backendAddressPools/pool',
          },
        ],
      },
    });
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm.nicName);
    const after = await client.networkInterfaces.createOrUpdate(
      RG,
      vm.nicName,
      withConfigs(nic, rig.nodeSubnetId, ['p1']),
    );
    expect(after.virtualMachine?.id).to.equal(vm.vmId);
    expect(after.macAddress).to.equal(nic.macAddress);
    expect(after.enableAcceleratedNetworking).to.equal(true);
    expect(after.dnsSettings?.dnsServers).to.deep.equal(['10.0.0.10']);
    expect(after.networkSecurityGroup?.id).to.match(/nsg$/);
    expect(after.tags).to.deep.equal({ team: 'net' });
    expect(after.ipConfigurations![0]!.loadBalancerBackendAddressPools![0]!.id).to.match(/pool$/);
    const many = withConfigs(
      after,
      rig.nodeSubnetId,
      Array.from({ length: 255 }, (_, i) => `n${i}`),
    );
    const err = await client.networkInterfaces
      .createOrUpdate(RG, vm.nicName, many)
      .catch((e: unknown) => e as { statusCode?: number; code?: string });
    expect(err).to.include({
      statusCode: 400,
      code: 'NetworkInterfaceIpConfigurationLimitReached',
    });
  });

  it('ends the operation Failed with SubnetIsFull in lro mode, NIC unchanged', async () => {
    rig = await startRig({ podPrefix: '10.241.0.0/29', subnetFullMode: 'lro', operationMs: 30 });
    const [vm] = addNodes(rig, 1);
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const err = await client.networkInterfaces
      .createOrUpdate(RG, vm!.nicName, withConfigs(nic, rig.podSubnetId, ['a', 'b', 'c', 'd']), {
        updateIntervalInMs: 10,
      })
      .catch((e: unknown) => e as Error);
    expect((err as Error).message).to.match(/SubnetIsFull/);
    const now = await client.networkInterfaces.get(RG, vm!.nicName);
    expect(now.ipConfigurations).to.have.length(1);
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse).to.equal(1); // the pod NIC's own
  });

  it('a landed fault makes the change and answers the error all the same', async () => {
    rig = await startRig();
    const [vm] = addNodes(rig, 1);
    const client = clientFor(rig, { retry: { maxRetries: 0 } });
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    rig.em.inject({ operation: 'NetworkInterfaces.CreateOrUpdate', status: 500, landed: true });
    const err = await client.networkInterfaces
      .createOrUpdate(RG, vm!.nicName, withConfigs(nic, rig.podSubnetId, ['lost']), {
        requestOptions: { headers: { 'if-match': nic.etag! } },
      })
      .then(
        () => undefined,
        (e: unknown) => e as { statusCode?: number },
      );
    expect(err?.statusCode).to.equal(500);
    const after = await client.networkInterfaces.get(RG, vm!.nicName);
    expect(after.ipConfigurations!.map((c) => c.name)).to.include('lost');
    expect(after.etag).to.not.equal(nic.etag);
  });

  it('refuses a request without the right bearer token', async () => {
    rig = await startRig();
    addNodes(rig, 1);
    const err = await clientFor(rig, { tokens: staticToken('wrong') })
      .networkInterfaces.get(RG, 'node-0-nic')
      .catch((e: unknown) => e as { statusCode?: number; code?: string });
    expect(err).to.include({ statusCode: 401, code: 'InvalidAuthenticationToken' });
  });
});
