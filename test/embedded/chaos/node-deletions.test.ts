// What the chaos runs check of Node deletions: an address a Running pod on
// node A reports is never in another node's NNC status (terminating NNCs
// included), and the plan deletes Nodes, once with the fulfillers down,
// early enough that they are back before the end.
import { expect } from 'chai';
import { NODE_DELETION_WINDOW, planChaos } from '../../../harness/embedded/chaos/plan.ts';
import {
  POD_IP_ON_OTHER_NNC,
  podIpsOnOtherNncs,
} from '../../../harness/embedded/invariant-watch.ts';
import type { NodeNetworkConfig } from '../../../src/nnc/types.ts';

const nnc = (name: string, ips: string[], terminating = false): NodeNetworkConfig =>
  ({
    metadata: {
      name,
      ...(terminating ? { deletionTimestamp: '2026-11-28T00:00:00Z' } : {}),
    },
    status: {
      networkContainers: [{ ipAssignments: ips.map((ip, i) => ({ name: `${name}-${i}`, ip })) }],
    },
  }) as unknown as NodeNetworkConfig;

const pod = (name: string, node: string, ip: string, phase = 'Running') => ({
  metadata: { name, namespace: 'w' },
  spec: { nodeName: node },
  status: { phase, podIP: ip, podIPs: [{ ip }] },
});

describe('embedded/chaos: node deletions', () => {
  it("finds a running pod's address on another node's NNC", () => {
    const v = podIpsOnOtherNncs(
      [pod('a', 'node-0', '10.0.0.4'), pod('b', 'node-1', '10.0.0.5')],
      [nnc('node-0', ['10.0.0.4'], true), nnc('node-1', ['10.0.0.5', '10.0.0.4'])],
    );
    expect(v.map((x) => [x.kind, x.pods, x.ip, x.nncs])).to.deep.equal([
      [POD_IP_ON_OTHER_NNC, ['w/a'], '10.0.0.4', ['node-1']],
    ]);
  });

  it('says nothing of finished pods, of host-network pods, or of a node whose NNC is gone', () => {
    const hostNet = {
      ...pod('h', 'node-0', '10.0.0.6'),
      spec: { nodeName: 'node-0', hostNetwork: true },
    };
    expect(
      podIpsOnOtherNncs(
        [pod('a', 'node-0', '10.0.0.4', 'Succeeded'), hostNet, pod('c', 'node-2', '10.0.0.7')],
        [nnc('node-1', ['10.0.0.4', '10.0.0.6']), nnc('node-2', ['10.0.0.7'])],
      ),
    ).to.deep.equal([]);
  });

  it('plans Node deletions, the first drawn with the fulfillers down, in the first 60 % of the run', () => {
    for (const seed of [1, 2, 3, 20261123]) {
      const durationMs = 45_000;
      const plan = planChaos({
        seed,
        rate: 0.2,
        durationMs,
        nodes: ['node-0', 'node-1', 'node-2'],
        nodeDeletions: true,
      });
      const deletions = plan.filter((a) => a.kind === 'delete-node');
      expect(deletions.length).to.be.at.least(2);
      expect(deletions.some((a) => a.fulfillersDown)).to.equal(true);
      for (const d of deletions) {
        expect(d.atMs).to.be.at.most(durationMs * NODE_DELETION_WINDOW + 1);
        expect(d.downMs).to.be.within(2000, 6000);
      }
    }
    expect(planChaos({ seed: 1, rate: 0, durationMs: 45_000, nodes: ['a'] })).to.deep.equal([]);
  });
});
