import { expect } from 'chai';
import fc from 'fast-check';
import type { NodeNetworkConfig } from '../../../src/nnc/types.ts';
import { clusterSample, IpChurnTracker } from '../../../src/sim/report/sample.ts';

const nnc = (
  name: string,
  requested: number,
  ips: string[],
  staticIps: string[] = [],
): NodeNetworkConfig => ({
  metadata: { name },
  spec: { requestedIPCount: requested },
  status: {
    networkContainers: [
      {
        id: `${name}-dyn`,
        assignmentMode: 'dynamic',
        ipAssignments: ips.map((ip) => ({ name: ip, ip })),
      },
      {
        id: `${name}-static`,
        assignmentMode: 'static',
        ipAssignments: staticIps.map((ip) => ({ name: ip, ip })),
      },
    ],
  },
});

describe('sim/report/sample', () => {
  it('sums demand, requested and allocated over nodes', () => {
    const pods = [
      { spec: { nodeName: 'a' }, status: { phase: 'Running' } },
      { spec: { nodeName: 'a' }, status: { phase: 'Pending' } },
      { spec: { nodeName: 'b' }, status: { phase: 'Succeeded' } },
      { spec: { nodeName: 'b', hostNetwork: true }, status: { phase: 'Running' } },
      { spec: {}, status: { phase: 'Pending' } },
    ];
    const s = clusterSample(12.5, pods, [nnc('a', 16, ['1', '2']), nnc('b', 32, ['3'], ['9'])]);
    expect(s).to.deep.equal({ t: 12.5, demand: 2, requested: 48, allocated: 3 });
  });

  it('counts churn exactly, including nodes that disappear', () => {
    const t = new IpChurnTracker();
    t.observe([nnc('a', 0, ['1', '2'])]);
    t.observe([nnc('a', 0, ['2', '3', '4'])]);
    t.observe([nnc('b', 0, ['5'])]);
    expect(t.totals()).to.deep.equal({ allocated: 5, released: 4 });
  });

  it('allocated − released always equals the IPs held now', () => {
    const snap = fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { maxLength: 10 }), {
      minLength: 1,
      maxLength: 3,
    });
    fc.assert(
      fc.property(fc.array(snap, { minLength: 1, maxLength: 10 }), (snaps) => {
        const t = new IpChurnTracker();
        for (const s of snaps) t.observe(s.map((ips, i) => nnc(`n${i}`, 0, ips.map(String))));
        const last = snaps.at(-1)!;
        expect(t.allocated - t.released).to.equal(last.reduce((n, ips) => n + ips.length, 0));
      }),
    );
  });
});
