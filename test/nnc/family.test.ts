// The address families of an NNC's containers: what decides a container's
// family, which field breaks it, and the figures per family the sidecar
// needs (the pool's size in pods, the subnets whose CSS count).
import { expect } from 'chai';
import {
  addressFamily,
  cidrFamily,
  containerFamily,
  containersByFamily,
  familyMismatch,
  poolSize,
  subnetNames,
} from '../../src/nnc/family.ts';
import type { NetworkContainer, NodeNetworkConfig } from '../../src/nnc/types.ts';

const v4 = (n: number): NetworkContainer => ({
  id: `nc-v4-${n}`,
  assignmentMode: 'dynamic',
  subnetName: 'pods-v4',
  subnetAddressSpace: '10.240.0.0/16',
  defaultGateway: '10.240.0.1',
  primaryIP: '10.240.0.4',
  ipAssignments: Array.from({ length: n }, (_, i) => ({ name: `a${i}`, ip: `10.240.1.${i}` })),
});
const v6 = (n: number): NetworkContainer => ({
  id: `nc-v6-${n}`,
  assignmentMode: 'dynamic',
  subnetName: 'pods-v6',
  subnetAddressSpace: 'fd00:10:240::/112',
  defaultGateway: 'fd00:10:240::1',
  primaryIP: 'fd00:10:240::4',
  ipAssignments: Array.from({ length: n }, (_, i) => ({
    name: `b${i}`,
    ip: `fd00:10:240::1:${i.toString(16)}`,
  })),
});
const nncOf = (...containers: NetworkContainer[]): NodeNetworkConfig => ({
  metadata: { name: 'node-1' },
  status: { scaler: {}, networkContainers: containers },
});

describe('nnc/family', () => {
  it('tells the families of addresses and CIDRs apart by node:net, not a pattern', () => {
    expect(addressFamily('10.0.0.1')).to.equal(4);
    expect(addressFamily('fd00::1')).to.equal(6);
    expect(addressFamily('::ffff:10.0.0.1')).to.equal(6);
    expect(addressFamily('10.0.0.01')).to.equal(undefined);
    expect(addressFamily('10.0.0.0/8')).to.equal(undefined);
    expect(addressFamily(7)).to.equal(undefined);
    expect(cidrFamily('fd00:10:240::/112')).to.equal(6);
    expect(cidrFamily('10.240.0.0/16')).to.equal(4);
    expect(cidrFamily('not a cidr/8')).to.equal(undefined);
  });

  it("takes a container's family from its subnet, else its primary IP, gateway, addresses", () => {
    expect(containerFamily(v6(1))).to.equal(6);
    expect(containerFamily({ id: 'x', primaryIP: 'fd00::4' })).to.equal(6);
    expect(containerFamily({ id: 'x', defaultGateway: '10.0.0.1' })).to.equal(4);
    expect(containerFamily({ id: 'x', ipAssignments: [{ name: 'a', ip: 'fd00::9' }] })).to.equal(6);
    expect(containerFamily({ id: 'x' })).to.equal(undefined);
  });

  it('names the first field of another family than the container', () => {
    expect(familyMismatch(v4(3))).to.equal(undefined);
    expect(familyMismatch(v6(3))).to.equal(undefined);
    const gateway = familyMismatch({ ...v6(1), defaultGateway: '10.240.0.1' });
    expect(gateway?.field).to.equal('defaultGateway');
    expect(gateway?.reason).to.equal(
      'defaultGateway 10.240.0.1 is IPv4, the container is IPv6 (subnetAddressSpace fd00:10:240::/112)',
    );
    const mixed = v4(3);
    mixed.ipAssignments![2] = { name: 'a2', ip: 'fd00::2' };
    expect(familyMismatch(mixed)?.field).to.equal('ipAssignments[2].ip');
    // Not an address at all: validation elsewhere says so.
    expect(familyMismatch({ ...v4(1), primaryIP: 'garbage' })).to.equal(undefined);
  });

  it('groups dynamic containers by family, IPv4 first, and sizes the pool in pods', () => {
    const grouped = containersByFamily([v6(2), v4(3)]);
    expect([...grouped.keys()]).to.deep.equal([4, 6]);
    // Dual-stack: a pod takes one of each, the family that holds most is the pool.
    expect(poolSize(nncOf(v4(3), v6(2)))).to.equal(3);
    // One family in two containers (as before dual-stack): their sum.
    expect(poolSize(nncOf(v4(3), { ...v4(4), id: 'other' }))).to.equal(7);
    expect(poolSize(nncOf())).to.equal(0);
    expect(subnetNames(nncOf(v4(1), v6(1), v4(2)))).to.deep.equal(['pods-v4', 'pods-v6']);
    expect(subnetNames(undefined)).to.deep.equal([]);
  });
});
