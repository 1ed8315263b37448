// The address families of an embedded run, on hand-made inputs: the pod
// subnets each choice gives the fulfiller, the half-pod check the invariant
// watch runs on every Running pod, and the report's tally by family.
import { expect } from 'chai';
import fc from 'fast-check';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import type { PodSnapshot } from '../../src/sim/invariants.ts';
import { parseCidr6 } from '../../src/fulfiller/cidr6.ts';
import { parseCidr, usableCount } from '../../src/fulfiller/cidr.ts';
import {
  familiesOf,
  familyProblem,
  ipv6PodSubnet,
  podSubnets,
} from '../../harness/embedded/ip-family.ts';
import { FamilyTally, familyLine, familyProblems } from '../../harness/embedded/family-tally.ts';
import {
  POD_ADDRESS_FAMILIES,
  podFamilyViolations,
} from '../../harness/embedded/invariant-watch.ts';
import { ClusterSampler } from '../../harness/embedded/sampler.ts';

const pod = (name: string, phase: string, ips: string[], hostNetwork = false): PodSnapshot => ({
  metadata: { name, namespace: 'workload' },
  spec: { nodeName: 'node-0', ...(hostNetwork ? { hostNetwork } : {}) },
  status: {
    phase,
    ...(ips[0] ? { podIP: ips[0] } : {}),
    ...(ips.length ? { podIPs: ips.map((ip) => ({ ip })) } : {}),
  },
});

/** A dual-stack NNC: v4 and v6 addresses in one dynamic container each. */
const nnc = (node: string, v4: number, v6: number): NodeNetworkConfig =>
  ({
    metadata: { name: node },
    spec: { requestedIPCount: Math.max(v4, v6) },
    status: {
      networkContainers: [
        {
          id: `${node}-v4`,
          assignmentMode: 'dynamic',
          subnetAddressSpace: '10.240.0.0/24',
          ipAssignments: Array.from({ length: v4 }, (_, i) => ({
            name: `${node}-4-${i}`,
            ip: `10.240.0.${i + 4}`,
          })),
        },
        {
          id: `${node}-v6`,
          assignmentMode: 'dynamic',
          subnetAddressSpace: 'fd00:10:240::/120',
          ipAssignments: Array.from({ length: v6 }, (_, i) => ({
            name: `${node}-6-${i}`,
            ip: `fd00:10:240::${(i + 4).toString(16)}`,
          })),
        },
      ].filter((nc) => nc.ipAssignments.length > 0),
    },
  }) as NodeNetworkConfig;

describe('embedded: address families (--ip-family)', () => {
  it('gives the fulfiller the IPv4 subnet, an IPv6 one as large, or both, IPv4 first', () => {
    expect(podSubnets('10.240.0.0/24', 'ipv4')).to.deep.equal(['10.240.0.0/24']);
    expect(podSubnets('10.240.0.0/24', 'ipv6')).to.deep.equal(['fd00:10:240::/120']);
    expect(podSubnets('10.240.0.0/16', 'dual')).to.deep.equal([
      '10.240.0.0/16',
      'fd00:10:240::/112',
    ]);
    expect(familiesOf('dual')).to.deep.equal([4, 6]);
    expect(() => podSubnets('10.240.0.1/24', 'dual')).to.throw(/host bits set/);
  });

  it('the IPv6 subnet holds as many usable addresses as the IPv4 one, for every prefix', () => {
    fc.assert(
      fc.property(fc.integer({ min: 8, max: 29 }), (prefix) => {
        const size = 2 ** (32 - prefix);
        const v4 = parseCidr(`10.0.0.0/${prefix}`);
        const v6 = parseCidr6(ipv6PodSubnet(`10.0.0.0/${prefix}`));
        expect(v6.size).to.equal(BigInt(size));
        // Both families lose Azure's five reserved addresses (cidr.ts, cidr6.ts).
        expect(usableCount(v4)).to.equal(size - 5);
      }),
    );
  });

  it('a pod is whole with one address of each family of the run and nothing else', () => {
    expect(familyProblem(['10.0.0.4', 'fd00::4'], [4, 6])).to.equal(undefined);
    expect(familyProblem(['10.0.0.4'], [4, 6])).to.equal('no IPv6 address');
    expect(familyProblem(['fd00::4'], [4, 6])).to.equal('no IPv4 address');
    expect(familyProblem(['fd00::4', 'fd00::5'], [6])).to.equal('2 IPv6 addresses');
    expect(familyProblem(['10.0.0.4', 'fd00::4'], [4])).to.equal(
      'an IPv6 address in a run without IPv6',
    );
    expect(familyProblem(['fd00::4'], [6])).to.equal(undefined);
  });

  it('the invariant watch names every Running pod that is not whole (not host-network, not pending)', () => {
    const pods = [
      pod('whole', 'Running', ['10.240.0.4', 'fd00:10:240::4']),
      pod('half', 'Running', ['10.240.0.5']),
      pod('none', 'Running', []), // running-without-ip says it already
      pod('pending', 'Pending', ['10.240.0.6']),
      pod('host', 'Running', ['10.0.0.4'], true),
    ];
    const found = podFamilyViolations(pods, [4, 6]);
    expect(found).to.have.length(1);
    expect(found[0]).to.deep.include({
      kind: POD_ADDRESS_FAMILIES,
      pods: ['workload/half'],
      node: 'node-0',
      message: 'pod workload/half runs with 10.240.0.5: no IPv6 address',
    });
    expect(podFamilyViolations(pods.slice(0, 1), [4, 6])).to.deep.equal([]);
    expect(podFamilyViolations([pod('v4', 'Running', ['10.240.0.4'])], [6])).to.have.length(1);
  });

  it('tallies pods served by family and the NNC addresses by family at their peak', () => {
    const t = new FamilyTally('dual', [4, 6], ['10.240.0.0/24', 'fd00:10:240::/120']);
    t.servedWith(['10.240.0.4', 'fd00:10:240::4']);
    t.servedWith(['10.240.0.5', 'fd00:10:240::5']);
    t.servedWith(['10.240.0.6']);
    t.observe([nnc('a', 16, 16), nnc('b', 16, 0)]);
    t.observe([nnc('a', 16, 16), nnc('b', 32, 32)]);
    t.observe([nnc('a', 0, 0)]);
    const r = t.report();
    expect(r).to.deep.equal({
      ipFamily: 'dual',
      subnets: ['10.240.0.0/24', 'fd00:10:240::/120'],
      podsServed: 3,
      podsWith: { IPv4: 3, IPv6: 2 },
      podsWithEvery: 2,
      peakAddresses: { IPv4: 48, IPv6: 48 },
    });
    expect(familyLine(r)).to.equal(
      '  address families             dual-stack (10.240.0.0/24, fd00:10:240::/120): 3 pods served, 3 with IPv4, 2 with IPv6 (2 with both); NNC addresses at the peak IPv4 48, IPv6 48',
    );
    expect(familyProblems(r)).to.deep.equal([
      '1 pod(s) served without exactly one address of each family (dual)',
    ]);
    const six = new FamilyTally('ipv6', [6], ['fd00:10:240::/120']);
    six.servedWith(['fd00:10:240::4']);
    expect(familyProblems(six.report())).to.deep.equal([]);
    expect(familyLine(six.report())).to.equal(
      '  address families             IPv6 (fd00:10:240::/120): 1 pods served, 1 with IPv6; NNC addresses at the peak none',
    );
  });

  it("counts a dual-stack node's pool in pods on the timeline, not in addresses", () => {
    const s = new ClusterSampler();
    s.sample(0, {
      pods: [pod('a', 'Running', ['10.240.0.4', 'fd00:10:240::4'])],
      nncs: [nnc('n0', 16, 16)],
      subnets: [],
    });
    expect(s.samples).to.deep.equal([{ t: 0, demand: 1, requested: 16, allocated: 16 }]);
    // Churn counts every address that came: both families'.
    expect(s.churn.totals()).to.deep.equal({ allocated: 32, released: 0 });
  });
});
