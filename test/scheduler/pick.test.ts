// The scheduler's pure decision: the Ready, schedulable, matching node with
// the most free room; kube-scheduler's wording when none fits.
import { expect } from 'chai';
import fc from 'fast-check';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import {
  allocatablePods,
  DEFAULT_NODE_PODS,
  needsNode,
  nodeView,
  pickNode,
  podsPerNode,
  toleratesTaint,
  type NodeView,
} from '../../harness/scheduler/pick.ts';

const view = (name: string, used: number, extra: Partial<NodeView> = {}): NodeView => ({
  name,
  ready: true,
  unschedulable: false,
  labels: {},
  allocatablePods: 10,
  used,
  taints: [],
  ...extra,
});

describe('sim/scheduler: pickNode', () => {
  it('picks the node with the most free room, ties to the first name', () => {
    expect(pickNode([view('a', 5), view('b', 2), view('c', 9)])).to.deep.equal({ node: 'b' });
    expect(pickNode([view('b', 2), view('a', 2)])).to.deep.equal({ node: 'a' });
    expect(
      pickNode([view('a', 5, { allocatablePods: 100 }), view('b', 0, { allocatablePods: 10 })]),
    ).to.deep.equal({ node: 'a' });
  });

  it('skips nodes not Ready, unschedulable, not matching the selector or full, and says so', () => {
    const nodes = [
      view('a', 0, { ready: false }),
      view('b', 0, { unschedulable: true }),
      view('c', 0, { labels: { zone: '2' } }),
      view('d', 10, { labels: { zone: '1' } }),
    ];
    expect(pickNode(nodes, { zone: '1' })).to.deep.equal({
      reason:
        "0/4 nodes are available: 1 node(s) were not ready, 1 node(s) were unschedulable, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had too many pods.",
    });
    expect(pickNode(nodes, { zone: '2' })).to.deep.equal({ node: 'c' });
    expect(pickNode([])).to.deep.equal({ reason: '0/0 nodes are available.' });
  });

  it('never picks a node without room, and always one when some node has room', () => {
    const arb = fc.array(
      fc.record({
        used: fc.nat(20),
        allocatablePods: fc.nat(20),
        ready: fc.boolean(),
      }),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(arb, (specs) => {
        const nodes = specs.map((s, i) => view(`n${i}`, s.used, s));
        const fits = nodes.filter((n) => n.ready && n.used < n.allocatablePods);
        const pick = pickNode(nodes);
        if (fits.length === 0) return 'reason' in pick;
        if (!('node' in pick)) return false;
        const chosen = nodes.find((n) => n.name === pick.node)!;
        const best = Math.max(...fits.map((n) => n.allocatablePods - n.used));
        return fits.includes(chosen) && chosen.allocatablePods - chosen.used === best;
      }),
    );
  });
});

describe('sim/scheduler: views of nodes and pods', () => {
  const pod = (nodeName: string | undefined, phase?: string, deleting = false): V1Pod => ({
    metadata: { name: 'p', ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    spec: { containers: [], ...(nodeName ? { nodeName } : {}) },
    status: phase ? { phase } : {},
  });

  it('counts the pods that still occupy a node, and knows which pods wait for one', () => {
    const used = podsPerNode([
      pod('a'),
      pod('a', 'Running'),
      pod('a', 'Succeeded'),
      pod('b'),
      pod(undefined),
    ]);
    expect([...used.entries()]).to.deep.equal([
      ['a', 2],
      ['b', 1],
    ]);
    expect(needsNode(pod(undefined))).to.equal(true);
    expect(needsNode(pod('a'))).to.equal(false);
    expect(needsNode(pod(undefined, 'Failed'))).to.equal(false);
    expect(needsNode(pod(undefined, undefined, true))).to.equal(false);
  });

  it('reads readiness, room and labels from the Node', () => {
    const node: V1Node = {
      metadata: { name: 'n', labels: { a: 'b' } },
      spec: { unschedulable: true },
      status: {
        allocatable: { pods: '30' },
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    };
    expect(nodeView(node, 3)).to.deep.equal({
      name: 'n',
      ready: true,
      unschedulable: true,
      labels: { a: 'b' },
      allocatablePods: 30,
      used: 3,
      taints: [],
    });
    expect(allocatablePods({ metadata: { name: 'x' } })).to.equal(DEFAULT_NODE_PODS);
    expect(nodeView({ metadata: { name: 'x' }, status: { conditions: [] } }, 0).ready).to.equal(
      false,
    );
  });

  it("honours NoSchedule and NoExecute taints as kube-scheduler's TaintToleration filter does", () => {
    const key = 'pool-monitor.acn.azure.com/no-pod-ips';
    const taint = { key, value: 'subnet-exhausted', effect: 'NoSchedule' };
    const nodes = [view('a', 0, { taints: [taint] }), view('b', 5)];
    // The emptier node is tainted: the pod goes to the other.
    expect(pickNode(nodes)).to.deep.equal({ node: 'b' });
    expect(pickNode([nodes[0]!])).to.deep.equal({
      reason: `0/1 nodes are available: 1 node(s) had untolerated taint {${key}: subnet-exhausted}.`,
    });
    // Tolerated: by key (Exists), by key and value (Equal), by everything (empty key, Exists).
    for (const t of [
      { key, operator: 'Exists' },
      { key, operator: 'Equal', value: 'subnet-exhausted', effect: 'NoSchedule' },
      { operator: 'Exists' },
    ])
      expect(pickNode(nodes, {}, [t])).to.deep.equal({ node: 'a' });
    // Not tolerated: another value, another effect, another key.
    for (const t of [
      { key, operator: 'Equal', value: 'max-ip-count' },
      { key, operator: 'Exists', effect: 'NoExecute' },
      { key: 'other', operator: 'Exists' },
    ])
      expect(pickNode(nodes, {}, [t])).to.deep.equal({ node: 'b' });
    // PreferNoSchedule only scores in kube-scheduler: never filtered.
    expect(
      pickNode([view('a', 0, { taints: [{ ...taint, effect: 'PreferNoSchedule' }] })]),
    ).to.deep.equal({ node: 'a' });
    expect(toleratesTaint({ key: '', operator: 'Equal' }, taint)).to.equal(false);
  });
});
