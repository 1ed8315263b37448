// The pure NIC planner and the container built from a NIC.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import type { NetworkInterface, NetworkInterfaceIPConfiguration } from '@azure/arm-network';
import { heldContainer } from '../../src/azure/container.ts';
import {
  isManagedSecondary,
  isNcPrimary,
  MAX_IP_CONFIGURATIONS,
  NC_PRIMARY_NAME,
  planNic,
  planRelease,
} from '../../src/azure/nic-plan.ts';

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
