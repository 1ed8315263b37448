// The node's pool by address family (src/sidecar/families.ts): each family
// with its own subnet, the exhaustion its own ClusterSubnetState says, its
// primary IPs and counts; and exhaustion of the node counting either
// family's subnet (src/sidecar/demand.ts).
import { expect } from 'chai';
import type { StateCounts } from '../../src/ipstore/types.ts';
import type { ClusterSubnetState, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { subnetExhausted } from '../../src/sidecar/demand.ts';
import { familyPools } from '../../src/sidecar/families.ts';

const counts = (a: number, s: number): StateCounts => ({
  Available: a,
  Assigned: s,
  PendingRelease: 0,
  PendingProgramming: 0,
});
const css = (name: string, exhausted: boolean): ClusterSubnetState => ({
  metadata: { name },
  status: { exhausted },
});
const nnc: NodeNetworkConfig = {
  metadata: { name: 'node-1' },
  status: {
    scaler: {},
    networkContainers: [
      {
        id: 'v6',
        subnetName: 'pods-v6',
        subnetAddressSpace: 'fd00:10::/112',
        primaryIP: 'fd00:10::4',
        ipAssignments: [{ name: 'b', ip: 'fd00:10::a' }],
      },
      { id: 'static', assignmentMode: 'static', subnetAddressSpace: '192.168.0.0/24' },
      {
        id: 'v4',
        subnetName: 'pods-v4',
        subnetAddressSpace: '10.10.0.0/16',
        primaryIP: '10.10.0.4',
        ipAssignments: [{ name: 'a', ip: '10.10.1.1' }],
      },
    ],
  },
};

describe('sidecar/families', () => {
  it('gives each family its subnet, its own exhaustion and its counts, IPv4 first', () => {
    const pools = familyPools({
      nnc,
      css: [css('pods-v4', false), css('pods-v6', true)],
      mode: 'name',
      counts: [
        { family: 4, counts: counts(1, 0) },
        { family: 6, counts: counts(0, 1) },
      ],
    });
    expect(pools).to.deep.equal([
      {
        family: 4,
        name: 'IPv4',
        subnet: 'pods-v4',
        subnetAddressSpace: '10.10.0.0/16',
        exhausted: false,
        primaryIPs: 1,
        counts: counts(1, 0),
      },
      {
        family: 6,
        name: 'IPv6',
        subnet: 'pods-v6',
        subnetAddressSpace: 'fd00:10::/112',
        exhausted: true,
        primaryIPs: 1,
        counts: counts(0, 1),
      },
    ]);
  });

  it('shows a family the status dropped while pods still hold its addresses, and none without', () => {
    const pools = familyPools({
      nnc: { metadata: { name: 'n' }, status: { scaler: {}, networkContainers: [] } },
      css: [],
      mode: 'name',
      counts: [{ family: 6, counts: counts(0, 2) }],
    });
    expect(pools.map((p) => [p.name, p.subnet, p.counts.Assigned])).to.deep.equal([
      ['IPv6', undefined, 2],
    ]);
    expect(familyPools({ nnc: undefined, css: [], mode: 'any', counts: [] })).to.deep.equal([]);
  });

  it("counts the node exhausted when either family's subnet is, or any CSS in mode any", () => {
    const states = [css('pods-v4', false), css('pods-v6', true), css('other', false)];
    expect(subnetExhausted(states, ['pods-v4', 'pods-v6'], 'name')).to.equal(true);
    expect(subnetExhausted(states, ['pods-v4'], 'name')).to.equal(false);
    expect(subnetExhausted(states, 'pods-v6', 'name')).to.equal(true);
    expect(subnetExhausted(states, [], 'name')).to.equal(false);
    expect(subnetExhausted(states, [], 'any')).to.equal(true);
  });
});
