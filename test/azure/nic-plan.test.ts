// The pure NIC planner and the container built from a NIC.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import type { NetworkInterface, NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import { heldContainer, podSubnetFacts } from '../../src/azure/container.ts';
import {
  isManagedSecondary,
  isNcPrimary,
  MAX_IP_CONFIGURATIONS,
  NC_PRIMARY_NAME,
  NC_PRIMARY_NAME_IPV6,
  planNic,
  planNicFamilies,
  planRelease,
  shareRoom,
} from '../../src/azure/nic-plan.ts';
import { NodeSetupError } from '../../src/fulfiller/backend.ts';

const VNET = '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet';
const POD = `${VNET}/subnets/pods`;
const NODES = `${VNET}/subnets/nodes`;
const OTHER = `${VNET}/subnets/other`;

const cfg = (
  name: string,
  subnet: string,
  ip?: string,
  primary = false,
): NetworkInterfaceIPConfiguration => ({
  name,
  subnet: { id: subnet },
  primary,
  privateIPAllocationMethod: 'Dynamic',
  ...(ip ? { privateIPAddress: ip } : {}),
});

function baseNic(extra: NetworkInterfaceIPConfiguration[] = []): NetworkInterface {
  return {
    name: 'nic-1',
    etag: 'W/"1"',
    tags: { team: 'net' },
    enableAcceleratedNetworking: true,
    dnsSettings: { dnsServers: ['10.0.0.10'] },
    networkSecurityGroup: { id: `${VNET}/../nsg` },
    ipConfigurations: [
      {
        ...cfg('ipconfig1', NODES, '10.224.0.4', true),
        loadBalancerBackendAddressPools: [{ id: 'lb/pool' }],
      },
      cfg('other-subnet', OTHER, '10.250.0.9'),
      cfg('hand-made', POD, '10.240.0.200'),
      ...extra,
    ],
  };
}

describe('planNic', () => {
  it('adds Dynamic UUID-named pod-subnet configs and the NC primary, leaving the rest as read', () => {
    const nic = baseNic();
    const plan = planNic({ nic, podSubnetId: POD, add: 3, remove: [], newName: randomUUID });
    expect(plan.createsPrimary).to.equal(true);
    expect(plan.added).to.have.length(3);
    const configs = plan.nic.ipConfigurations!;
    expect(configs.slice(0, 3)).to.deep.equal(nic.ipConfigurations);
    expect(configs[3]).to.deep.include({
      name: NC_PRIMARY_NAME,
      primary: false,
      privateIPAllocationMethod: 'Dynamic',
      subnet: { id: POD },
    });
    for (const c of configs.slice(4)) {
      expect(isManagedSecondary(c, POD)).to.equal(true);
      expect(c).to.deep.include({
        primary: false,
        privateIPAllocationMethod: 'Dynamic',
        subnet: { id: POD },
      });
    }
    const { ipConfigurations: _a, ...rest } = plan.nic;
    const { ipConfigurations: _b, ...restIn } = nic;
    expect(rest).to.deep.equal(restIn);
  });

  it('removes exactly the managed configs named, ignoring names that are not ours', () => {
    const a = randomUUID();
    const b = randomUUID();
    const nic = baseNic([
      cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'),
      cfg(a, POD, '10.240.0.6'),
      cfg(b, POD, '10.240.0.7'),
    ]);
    const plan = planNic({
      nic,
      podSubnetId: POD,
      add: 0,
      remove: [a, 'ipconfig1', 'other-subnet', 'hand-made', NC_PRIMARY_NAME, randomUUID()],
      known: [a, b],
      newName: randomUUID,
    });
    expect(plan.removed).to.deep.equal([a]);
    expect(plan.nic.ipConfigurations!.map((c) => c.name)).to.deep.equal([
      'ipconfig1',
      'other-subnet',
      'hand-made',
      NC_PRIMARY_NAME,
      b,
    ]);
    expect(plan.changed).to.equal(true);
  });

  it('counts managed configs the NNC does not list toward add (a lost status write)', () => {
    const orphan = randomUUID();
    const nic = baseNic([cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'), cfg(orphan, POD, '10.240.0.6')]);
    const plan = planNic({
      nic,
      podSubnetId: POD,
      add: 3,
      remove: [],
      known: [],
      newName: randomUUID,
    });
    expect(plan.adopted).to.deep.equal([orphan]);
    expect(plan.added).to.have.length(2);
    const none = planNic({
      nic,
      podSubnetId: POD,
      add: 1,
      remove: [],
      known: [],
      newName: randomUUID,
    });
    expect(none.changed).to.equal(false);
  });

  it('never plans more than 256 ipConfigurations', () => {
    const plan = planNic({
      nic: baseNic(),
      podSubnetId: POD,
      add: 300,
      remove: [],
      newName: randomUUID,
    });
    expect(plan.nic.ipConfigurations).to.have.length(MAX_IP_CONFIGURATIONS);
    expect(plan.capped).to.equal(true);
  });

  it('property: what is not ours stays exactly as read; ours = before − removed + added', () => {
    const arbConfig = fc.oneof(
      fc.uuid().map((u) => cfg(u, POD, '10.240.1.1')),
      fc.constantFrom(cfg('extra', OTHER, '10.250.0.1'), cfg('legacy', POD, '10.240.9.9')),
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(arbConfig, { maxLength: 40, selector: (c) => c.name }),
        fc.boolean(),
        fc.integer({ min: 0, max: 260 }),
        fc.func(fc.boolean()),
        fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined }),
        (extra, hasPrimary, add, pick, limit) => {
          const nic = baseNic([
            ...(hasPrimary ? [cfg(NC_PRIMARY_NAME, POD, '10.240.0.5')] : []),
            ...extra,
          ]);
          const names = nic.ipConfigurations!.map((c) => c.name!);
          const remove = names.filter((n) => pick(n));
          const plan = planNic({
            nic,
            podSubnetId: POD,
            add,
            remove,
            known: names,
            newName: randomUUID,
            ...(limit !== undefined ? { limit } : {}),
          });
          const ours = (c: NetworkInterfaceIPConfiguration) =>
            isManagedSecondary(c, POD) || isNcPrimary(c, POD);
          const before = nic.ipConfigurations!;
          const after = plan.nic.ipConfigurations!;
          expect(after.filter((c) => !ours(c))).to.deep.equal(before.filter((c) => !ours(c)));
          expect(after.length).to.be.at.most(MAX_IP_CONFIGURATIONS);
          for (const r of plan.removed) expect(remove).to.include(r);
          const managedBefore = before.filter((c) => isManagedSecondary(c, POD)).map((c) => c.name);
          const managedAfter = after.filter((c) => isManagedSecondary(c, POD)).map((c) => c.name);
          const expected = managedBefore
            .filter((n) => !plan.removed.includes(n!))
            .concat(plan.added);
          expect(managedAfter).to.deep.equal(expected);
          expect(after.filter((c) => isNcPrimary(c, POD))).to.have.length(1);
          const budget = limit === undefined ? Infinity : limit - (plan.createsPrimary ? 1 : 0);
          expect(plan.added.length).to.equal(
            Math.max(
              0,
              Math.min(add, MAX_IP_CONFIGURATIONS - (after.length - plan.added.length), budget),
            ),
          );
        },
      ),
    );
  });

  it('planRelease drops every managed config and the NC primary, nothing else', () => {
    const nic = baseNic([
      cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'),
      cfg(randomUUID(), POD, '10.240.0.6'),
    ]);
    const r = planRelease(nic, POD);
    expect(r.removed).to.have.length(2);
    expect(r.nic.ipConfigurations).to.deep.equal(nic.ipConfigurations!.slice(0, 3));
  });
});

describe('heldContainer', () => {
  it('builds the NNC container from the NIC as written', () => {
    const a = randomUUID();
    const nic = baseNic([
      cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'),
      cfg(a, POD, '10.240.0.6'),
      cfg(randomUUID(), POD),
    ]);
    const held = heldContainer(nic, {
      id: POD,
      name: 'pods',
      armName: 'pods',
      addressPrefix: '10.240.0.0/16',
    });
    expect(held).to.deep.equal({
      primaryIP: '10.240.0.5',
      subnetName: 'pods',
      subnetAddressSpace: '10.240.0.0/16',
      defaultGateway: '10.240.0.1',
      type: 'vnet',
      nodeIP: '10.224.0.4',
      ipAssignments: [{ name: a, ip: '10.240.0.6' }],
    });
    expect(
      heldContainer(baseNic(), {
        id: POD,
        name: 'pods',
        armName: 'pods',
        addressPrefix: '10.240.0.0/16',
      }),
    ).to.equal(undefined);
  });
});

describe('planNicFamilies (a dual-stack pod subnet: both families in one NIC)', () => {
  const v6cfg = (name: string, ip?: string): NetworkInterfaceIPConfiguration => ({
    ...cfg(name, POD, ip),
    privateIPAddressVersion: 'IPv6',
  });
  const managed = (nic: NetworkInterface, family: 4 | 6) =>
    nic.ipConfigurations!.filter((c) => isManagedSecondary(c, POD, family)).map((c) => c.name!);

  it('adds each family its NC primary and its addresses, IPv6 ones privateIPAddressVersion IPv6', () => {
    const nic = baseNic();
    const plan = planNicFamilies({
      nic,
      podSubnetId: POD,
      newName: randomUUID,
      families: [
        { family: 4, add: 3, remove: [] },
        { family: 6, add: 3, remove: [] },
      ],
    });
    const fresh = plan.nic.ipConfigurations!.slice(3);
    expect(
      fresh.map((c) => [
        c.name === NC_PRIMARY_NAME || c.name === NC_PRIMARY_NAME_IPV6 ? c.name : 'uuid',
        c.privateIPAddressVersion,
      ]),
    ).to.deep.equal([
      [NC_PRIMARY_NAME, 'IPv4'],
      ['uuid', 'IPv4'],
      ['uuid', 'IPv4'],
      ['uuid', 'IPv4'],
      [NC_PRIMARY_NAME_IPV6, 'IPv6'],
      ['uuid', 'IPv6'],
      ['uuid', 'IPv6'],
      ['uuid', 'IPv6'],
    ]);
    expect(plan.families.map((f) => [f.family, f.added.length, f.createsPrimary])).to.deep.equal([
      [4, 3, true],
      [6, 3, true],
    ]);
    for (const c of fresh) expect(c).to.deep.include({ subnet: { id: POD }, primary: false });
    // A deleted node: every managed config of both families goes, counted per family.
    const r = planRelease(plan.nic, POD);
    expect(r.removed).to.have.length(8);
    expect([...r.byFamily]).to.deep.equal([
      [4, 4],
      [6, 4],
    ]);
    expect(r.nic.ipConfigurations).to.deep.equal(nic.ipConfigurations);
  });

  it('each family removes and adopts only its own; an IPv4-only round leaves IPv6 configs alone', () => {
    const [a4, b4, a6, b6] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const nic = baseNic([
      cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'),
      cfg(a4, POD, '10.240.0.6'),
      cfg(b4, POD, '10.240.0.7'),
      v6cfg(NC_PRIMARY_NAME_IPV6, 'fd00::4'),
      v6cfg(a6, 'fd00::5'),
      v6cfg(b6, 'fd00::6'),
    ]);
    const plan = planNicFamilies({
      nic,
      podSubnetId: POD,
      newName: randomUUID,
      families: [
        { family: 4, add: 0, remove: [a4, a6], known: [a4] },
        { family: 6, add: 0, remove: [a6, a4], known: [a6] },
      ],
    });
    expect(plan.families.map((f) => [f.removed, f.adopted])).to.deep.equal([
      [[a4], [b4]],
      [[a6], [b6]],
    ]);
    expect(managed(plan.nic, 4)).to.deep.equal([b4]);
    expect(managed(plan.nic, 6)).to.deep.equal([b6]);
    // IPv4 alone (planNic): the IPv6 configs are not its, neither adopted nor removed.
    const v4 = planNic({
      nic,
      podSubnetId: POD,
      add: 0,
      remove: [a6],
      known: [a4, b4],
      newName: randomUUID,
    });
    expect(v4).to.deep.include({ removed: [], adopted: [], changed: false });
  });

  it('restores each family with Static addresses of its own version', () => {
    const a6 = randomUUID();
    const plan = planNicFamilies({
      nic: baseNic([cfg(NC_PRIMARY_NAME, POD, '10.240.0.5')]),
      podSubnetId: POD,
      newName: randomUUID,
      families: [
        { family: 4, add: 0, remove: [] },
        {
          family: 6,
          add: 0,
          remove: [],
          restore: [
            { name: NC_PRIMARY_NAME_IPV6, ip: 'fd00::4' },
            { name: a6, ip: 'fd00::9' },
          ],
        },
      ],
    });
    expect(plan.families[1]).to.deep.include({
      restored: [NC_PRIMARY_NAME_IPV6, a6],
      createsPrimary: false,
    });
    expect(plan.nic.ipConfigurations!.slice(-2)).to.deep.equal([
      {
        ...v6cfg(NC_PRIMARY_NAME_IPV6),
        privateIPAllocationMethod: 'Static',
        privateIPAddress: 'fd00::4',
      },
      { ...v6cfg(a6), privateIPAllocationMethod: 'Static', privateIPAddress: 'fd00::9' },
    ]);
  });

  it('property: under the NIC and VM caps the families stay in step, and nothing is over 256', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 200 }),
        (held4, held6, add4, add6, other) => {
          const nic = baseNic([
            cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'),
            ...Array.from({ length: held4 }, () => cfg(randomUUID(), POD, '10.240.1.1')),
            v6cfg(NC_PRIMARY_NAME_IPV6, 'fd00::4'),
            ...Array.from({ length: held6 }, () => v6cfg(randomUUID(), 'fd00::5')),
          ]);
          if (nic.ipConfigurations!.length > MAX_IP_CONFIGURATIONS) return;
          const known4 = managed(nic, 4);
          const known6 = managed(nic, 6);
          const plan = planNicFamilies({
            nic,
            podSubnetId: POD,
            newName: randomUUID,
            otherConfigs: other,
            families: [
              { family: 4, add: add4, remove: [], known: known4 },
              { family: 6, add: add6, remove: [], known: known6 },
            ],
          });
          const after = plan.nic.ipConfigurations!;
          expect(after.length).to.be.at.most(
            Math.max(nic.ipConfigurations!.length, MAX_IP_CONFIGURATIONS - other),
          );
          const [got4, got6] = plan.families.map((f) => f.added.length);
          expect(got4).to.be.at.most(add4);
          expect(got6).to.be.at.most(add6);
          if (plan.capped) {
            // All the room is used, and it went to the family holding fewest:
            // one got an address only while it held no more than the other, short one.
            const len = nic.ipConfigurations!.length;
            const room = Math.max(
              0,
              Math.min(MAX_IP_CONFIGURATIONS - len, MAX_IP_CONFIGURATIONS - len - other),
            );
            expect(got4! + got6!).to.equal(room);
            const [n4, n6] = [held4 + got4!, held6 + got6!];
            if (got4! < add4 && got6! > 0) expect(n6).to.be.at.most(n4 + 1);
            if (got6! < add6 && got4! > 0) expect(n4).to.be.at.most(n6 + 1);
          } else {
            expect([got4, got6]).to.deep.equal([add4, add6]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('shareRoom: all when it fits, else one at a time to the family holding fewest', () => {
    expect(shareRoom([3, 3], [0, 0], 10)).to.deep.equal([3, 3]);
    expect(shareRoom([5, 5], [0, 0], 5)).to.deep.equal([3, 2]);
    expect(shareRoom([5, 5], [4, 0], 6)).to.deep.equal([1, 5]);
    expect(shareRoom([1, 9], [0, 0], 6)).to.deep.equal([1, 5]);
    expect(shareRoom([4, 4], [0, 0], 0)).to.deep.equal([0, 0]);
  });
});

describe('heldContainer and podSubnetFacts of a dual-stack subnet', () => {
  const subnet = {
    id: POD,
    name: 'pods',
    addressPrefixes: ['10.240.0.0/16', 'fd00:10:240::/64'],
  };

  it("the IPv6 container: its NC primary, the IPv6 prefix and gateway, the CSS name's -ipv6", () => {
    const a6 = randomUUID();
    const nic = baseNic([
      cfg(NC_PRIMARY_NAME, POD, '10.240.0.5'),
      cfg(randomUUID(), POD, '10.240.0.6'),
      { ...cfg(NC_PRIMARY_NAME_IPV6, POD, 'fd00:10:240::4'), privateIPAddressVersion: 'IPv6' },
      { ...cfg(a6, POD, 'fd00:10:240::5'), privateIPAddressVersion: 'IPv6' },
    ]);
    const facts = podSubnetFacts(subnet, 6);
    expect(facts).to.deep.include({
      name: 'pods-ipv6',
      addressPrefix: 'fd00:10:240::/64',
      families: [4, 6],
    });
    expect(heldContainer(nic, facts)).to.deep.equal({
      primaryIP: 'fd00:10:240::4',
      subnetName: 'pods-ipv6',
      subnetAddressSpace: 'fd00:10:240::/64',
      defaultGateway: 'fd00:10:240::1',
      type: 'vnet',
      nodeIP: '10.224.0.4',
      ipAssignments: [{ name: a6, ip: 'fd00:10:240::5' }],
    });
    // The IPv4 container of the same NIC lists none of the IPv6 ones.
    expect(heldContainer(nic, podSubnetFacts(subnet, 4))!.ipAssignments).to.have.length(1);
  });

  it('a subnet without an IPv6 prefix has no IPv6 facts: a NodeSetupError naming its prefixes', () => {
    const err = (() => {
      try {
        return podSubnetFacts({ id: POD, name: 'pods', addressPrefix: '10.240.0.0/16' }, 6);
      } catch (e) {
        return e;
      }
    })();
    expect(err).to.be.instanceOf(NodeSetupError);
    expect(err).to.include({ reason: 'NoIPv6Prefix' });
    expect((err as Error).message).to.include('has no IPv6 address prefix (it has 10.240.0.0/16)');
  });
});
