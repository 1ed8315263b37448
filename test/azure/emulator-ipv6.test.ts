// The ARM emulator's IPv6 rules (harness/azure-emulator/README.md, the IPv6
// rows of the conformance table), through the real @azure/arm-network and
// @azure/arm-compute clients: a dual-stack subnet's prefixes, IPv6
// ipConfigurations (Dynamic and Static) in its IPv6 prefix, and what ARM
// refuses of them, each refusal changing nothing.
import { expect } from 'chai';
import type { NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import {
  addInstance,
  addNodes,
  clientFor,
  computeClientFor,
  POD6,
  RG,
  startRig,
} from './helpers.ts';
import type { Rig } from './helpers.ts';
import { secondary, tryPut, withConfigs } from './nic-writes.ts';

/** An IPv6 secondary ipConfiguration (Dynamic unless `extra` says). */
const v6 = (
  name: string,
  subnetId: string,
  extra: Partial<NetworkInterfaceIPConfiguration> = {},
): NetworkInterfaceIPConfiguration =>
  secondary(name, subnetId, { privateIPAddressVersion: 'IPv6', ...extra });

describe('ARM emulator: IPv6 ipConfigurations (real SDK)', function () {
  this.timeout(20_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('a dual-stack subnet lists both prefixes; an IPv6 ipConfiguration gets the lowest free address of its IPv6 prefix', async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const client = clientFor(rig);
    const subnet = await client.subnets.get(RG, 'vnet', 'pods');
    expect(subnet.addressPrefixes).to.deep.equal(['10.240.0.0/16', POD6]);
    expect(subnet.addressPrefix).to.equal(undefined);
    // An IPv4-only subnet still says addressPrefix.
    expect((await client.subnets.get(RG, 'vnet', 'nodes')).addressPrefix).to.equal('10.224.0.0/16');
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const written = await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      withConfigs(nic, v6('a', rig.podSubnetId), v6('b', rig.podSubnetId), {
        name: 'c',
        subnet: { id: rig.podSubnetId },
        primary: false,
      }),
    );
    const byName = new Map(written.ipConfigurations!.map((c) => [c.name, c]));
    expect(byName.get('a')).to.include({
      privateIPAddress: 'fd00:10:240::4',
      privateIPAddressVersion: 'IPv6',
    });
    expect(byName.get('b')!.privateIPAddress).to.equal('fd00:10:240::5');
    // The IPv4 one, without a version, is IPv4 in the IPv4 prefix.
    expect(byName.get('c')).to.include({ privateIPAddressVersion: 'IPv4' });
    expect(byName.get('c')!.privateIPAddress).to.match(/^10\.240\.0\.\d+$/);
    // The usage counts the IPv4 prefix: the NIC's primary and c.
    const usage = [];
    for await (const u of client.virtualNetworks.listUsage(RG, 'vnet')) usage.push(u);
    expect(usage.find((u) => u.id === rig.podSubnetId)).to.include({
      currentValue: 2,
      limit: 65_531,
    });
    // Removing `a` frees its address: the next IPv6 ipConfiguration gets it again.
    const again = await client.networkInterfaces.createOrUpdate(RG, vm!.nicName, {
      ...written,
      ipConfigurations: [
        ...written.ipConfigurations!.filter((c) => c.name !== 'a'),
        v6('d', rig.podSubnetId),
      ],
    });
    expect(again.ipConfigurations!.find((c) => c.name === 'd')!.privateIPAddress).to.equal(
      'fd00:10:240::4',
    );
  });

  it('refuses an IPv6 primary ipConfiguration, and a NIC whose only primary is IPv6', async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const primary = nic.ipConfigurations![0]!;
    const err = await tryPut(client, vm!.nicName, {
      ...nic,
      ipConfigurations: [
        { ...primary, primary: false },
        v6('v6', rig.podSubnetId, { primary: true }),
      ],
    });
    expect(err).to.include({ statusCode: 400, code: 'IPv6IpConfigurationCannotBePrimary' });
    expect(err.message).to.match(/ipConfigurations\/v6 is IPv6: the primary IP configuration/);
    const after = await client.networkInterfaces.get(RG, vm!.nicName);
    expect(after.etag).to.equal(nic.etag);
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse6).to.equal(0);
  });

  it('refuses an IPv6 ipConfiguration in a subnet without an IPv6 prefix', async () => {
    rig = await startRig({ ipv6PerNic: 'many' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const err = await tryPut(client, vm!.nicName, withConfigs(nic, v6('v6', rig.podSubnetId)));
    expect(err).to.include({ statusCode: 400, code: 'SubnetHasNoIPv6AddressPrefix' });
    expect((await client.networkInterfaces.get(RG, vm!.nicName)).etag).to.equal(nic.etag);
  });

  it('refuses a privateIPAddressVersion that is neither IPv4 nor IPv6', async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const err = await tryPut(
      client,
      vm!.nicName,
      withConfigs(nic, v6('x', rig.podSubnetId, { privateIPAddressVersion: 'IPv5' })),
    );
    expect(err).to.include({ statusCode: 400, code: 'InvalidRequestFormat' });
  });

  it('a Static IPv6 address: in the IPv6 prefix, not reserved, not taken, stored in ARM text', async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    const [a, b] = addNodes(rig, 2, 'node', 'node-subnet');
    const client = clientFor(rig);
    const put = async (vm: typeof a, ip: string) => {
      const nic = await client.networkInterfaces.get(RG, vm!.nicName);
      return tryPut(
        client,
        vm!.nicName,
        withConfigs(
          nic,
          v6('s', rig.podSubnetId, {
            privateIPAllocationMethod: 'Static',
            privateIPAddress: ip,
          }),
        ),
      );
    };
    // Written in full, upper case: kept as ARM writes it.
    expect(await put(a, 'FD00:0010:0240:0000:0000:0000:0000:0100')).to.deep.equal({});
    const nicA = await client.networkInterfaces.get(RG, a!.nicName);
    expect(nicA.ipConfigurations!.find((c) => c.name === 's')!.privateIPAddress).to.equal(
      'fd00:10:240::100',
    );
    const taken = await put(b, 'fd00:10:240::100');
    expect(taken).to.include({ statusCode: 400, code: 'PrivateIPAddressIsAllocated' });
    expect(taken.message).to.include('private IP address fd00:10:240::100');
    expect(taken.message).to.include(`networkInterfaces/${a!.nicName}`);
    const reserved = await put(b, 'fd00:10:240::2');
    expect(reserved).to.include({ statusCode: 400, code: 'PrivateIPAddressInReservedRange' });
    expect(reserved.message).to.include(`subnet prefix ${POD6}`);
    const outside = await put(b, 'fd00:10:241::5');
    expect(outside).to.include({ statusCode: 400, code: 'PrivateIPAddressNotInSubnet' });
    // An IPv4 address is not one of the IPv6 prefix either.
    expect(await put(b, '10.240.0.77')).to.include({ code: 'PrivateIPAddressNotInSubnet' });
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse6).to.equal(1);
  });

  it("as documented (ipv6PerNic 'one', the default): one IPv6 ipConfiguration, as the NIC's only secondary", async () => {
    rig = await startRig({ podPrefix6: POD6 });
    const [vm] = addNodes(rig, 1, 'node', 'node-subnet');
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const two = await tryPut(
      client,
      vm!.nicName,
      withConfigs(nic, v6('a', rig.podSubnetId), v6('b', rig.podSubnetId)),
    );
    expect(two).to.include({
      statusCode: 400,
      code: 'NetworkInterfaceIPv6IpConfigurationLimitReached',
    });
    const withV4 = await tryPut(
      client,
      vm!.nicName,
      withConfigs(nic, v6('a', rig.podSubnetId), {
        name: 'c',
        subnet: { id: rig.podSubnetId },
        primary: false,
      }),
    );
    expect(withV4).to.include({ code: 'NetworkInterfaceIPv6IpConfigurationLimitReached' });
    expect((await client.networkInterfaces.get(RG, vm!.nicName)).etag).to.equal(nic.etag);
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse6).to.equal(0);
    const one = await client.networkInterfaces.createOrUpdate(
      RG,
      vm!.nicName,
      withConfigs(nic, v6('a', rig.podSubnetId)),
    );
    expect(one.ipConfigurations!.map((c) => c.privateIPAddress)).to.deep.equal([
      '10.240.0.4',
      'fd00:10:240::4',
    ]);
  });

  it('IPv6 ipConfigurations count toward the NIC’s 256 and the VM’s 256', async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many', perVmCap: 10 });
    const [vm] = addNodes(rig, 1, 'node', 'pod-nic');
    const client = clientFor(rig);
    const nic = await client.networkInterfaces.get(RG, vm!.nicName);
    const configs = Array.from({ length: 9 }, (_, i) => v6(`v6-${i}`, rig.podSubnetId));
    // Its primary NIC's one, the pod NIC's primary and 9: 11 > 10.
    const err = await tryPut(client, vm!.nicName, withConfigs(nic, ...configs));
    expect(err).to.include({ code: 'PrivateIPAddressesPerVirtualMachineLimitReached' });
    const many = Array.from({ length: 256 }, (_, i) => v6(`w-${i}`, rig.podSubnetId));
    const tooMany = await tryPut(client, vm!.nicName, withConfigs(nic, ...many));
    expect(tooMany).to.include({ code: 'NetworkInterfaceIpConfigurationLimitReached' });
  });

  it("a Uniform scale-set VM's network profile carries IPv6 ipConfigurations to its NIC", async () => {
    rig = await startRig({ podPrefix6: POD6, ipv6PerNic: 'many' });
    addInstance(rig, { scaleSet: 'ss' });
    const compute = computeClientFor(rig);
    const vm = await compute.virtualMachineScaleSetVMs.get(RG, 'ss', '0');
    const entry = vm.networkProfileConfiguration!.networkInterfaceConfigurations![0]!;
    entry.ipConfigurations = [
      ...entry.ipConfigurations!,
      {
        name: 'v6',
        subnet: { id: rig.podSubnetId },
        primary: false,
        privateIPAddressVersion: 'IPv6',
      },
    ];
    const written = await compute.virtualMachineScaleSetVMs.update(
      RG,
      'ss',
      '0',
      { location: vm.location!, networkProfileConfiguration: vm.networkProfileConfiguration! },
      { ifMatch: vm.etag!, updateIntervalInMs: 10 },
    );
    const model = written.networkProfileConfiguration!.networkInterfaceConfigurations![0]!;
    expect(model.ipConfigurations!.map((c) => [c.name, c.privateIPAddressVersion])).to.deep.equal([
      ['ipconfig1', 'IPv4'],
      ['v6', 'IPv6'],
    ]);
    const nic = rig.em.network.getScaleSetNic(RG, 'ss', '0', 'ss-nic')!;
    const configs = nic.properties!.ipConfigurations as Array<{
      name: string;
      properties: Record<string, unknown>;
    }>;
    expect(configs.find((c) => c.name === 'v6')!.properties).to.include({
      privateIPAddress: 'fd00:10:240::4',
      privateIPAddressVersion: 'IPv6',
    });
  });
});
