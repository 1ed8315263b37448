import { expect } from 'chai';
import fc from 'fast-check';
import {
  checkClusterInvariants,
  persistentViolations,
  type PodSnapshot,
} from '../../src/sim/invariants.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { RESTORE_ANNOTATION } from '../../src/nnc/types.ts';

// A consistent world: each node has an NNC backing `size` IPs and some of its
// pods hold distinct ones; finished pods keep a stale IP that may be reused.
interface World {
  pods: PodSnapshot[];
  nncs: NodeNetworkConfig[];
}

const nodeArb = fc.record({
  size: fc.integer({ min: 1, max: 20 }),
  holders: fc.integer({ min: 0, max: 20 }),
  finished: fc.integer({ min: 0, max: 5 }),
  pending: fc.integer({ min: 0, max: 3 }),
  hostNetwork: fc.integer({ min: 0, max: 2 }),
  released: fc.integer({ min: 0, max: 20 }),
});

type NodeShape = typeof nodeArb extends fc.Arbitrary<infer T> ? T : never;

function buildWorld(nodes: NodeShape[]): World {
  const pods: PodSnapshot[] = [];
  const nncs: NodeNetworkConfig[] = [];
  nodes.forEach((n, ni) => {
    const node = `node-${ni}`;
    const ips = Array.from({ length: n.size }, (_, i) => `10.${ni}.0.${i + 1}`);
    const holders = Math.min(n.holders, n.size);
    // Only IPs nobody holds may be in ipsNotInUse.
    const free = ips.slice(holders);
    const notInUse = free.slice(0, Math.min(n.released, free.length)).map((ip) => `id-${ip}`);
    nncs.push({
      metadata: { name: node, namespace: 'kube-system' },
      spec: { requestedIPCount: n.size, ipsNotInUse: notInUse },
      status: {
        networkContainers: [
          {
            id: `nc-${ni}`,
            assignmentMode: 'dynamic',
            ipAssignments: ips.map((ip) => ({ name: `id-${ip}`, ip })),
          },
        ],
      },
    });
    for (let i = 0; i < holders; i += 1) {
      const ip = ips[i]!;
      pods.push({
        metadata: { name: `p-${ni}-${i}`, namespace: 'default' },
        spec: { nodeName: node },
        status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
      });
    }
    for (let i = 0; i < n.finished; i += 1) {
      const ip = ips[i % n.size]!;
      pods.push({
        metadata: { name: `done-${ni}-${i}`, namespace: 'default' },
        spec: { nodeName: node },
        status: { phase: i % 2 ? 'Failed' : 'Succeeded', podIP: ip },
      });
    }
    for (let i = 0; i < n.pending; i += 1) {
      pods.push({
        metadata: { name: `wait-${ni}-${i}`, namespace: 'default' },
        spec: { nodeName: node },
        status: { phase: 'Pending' },
      });
    }
    for (let i = 0; i < n.hostNetwork; i += 1) {
      pods.push({
        metadata: { name: `host-${ni}-${i}`, namespace: 'kube-system' },
        spec: { nodeName: node, hostNetwork: true },
        status: { phase: 'Running', podIP: `192.168.0.${ni}` },
      });
    }
  });
  return { pods, nncs };
}

const worldArb = fc.array(nodeArb, { minLength: 1, maxLength: 6 }).map(buildWorld);
const heldPods = (w: World) =>
  w.pods.filter((p) => p.status?.phase === 'Running' && !p.spec?.hostNetwork);

describe('sim/invariants', () => {
  it('finds nothing wrong in a consistent world', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        expect(checkClusterInvariants(w.pods, w.nncs)).to.deep.equal([]);
      }),
    );
  });

  // A successor NNC not restored yet: its restore annotation records its
  // addresses (docs/decisions/0030), so its pods' addresses are backed, and
  // one of them on another NNC is on two owners.
  it("counts a restore annotation as what records its node's addresses", () => {
    const containers = [
      {
        id: 'nc-a',
        assignmentMode: 'dynamic' as const,
        ipAssignments: [{ name: 'id-1', ip: '10.0.0.1' }],
      },
    ];
    const successor: NodeNetworkConfig = {
      metadata: {
        name: 'node-a',
        namespace: 'kube-system',
        annotations: { [RESTORE_ANNOTATION]: JSON.stringify(containers) },
      },
      spec: {},
    };
    const pod: PodSnapshot = {
      metadata: { name: 'p', namespace: 'default' },
      spec: { nodeName: 'node-a' },
      status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }] },
    };
    expect(checkClusterInvariants([pod], [successor])).to.deep.equal([]);
    const other: NodeNetworkConfig = {
      metadata: { name: 'node-b', namespace: 'kube-system' },
      spec: {},
      status: { networkContainers: [{ ...containers[0]!, id: 'nc-b' }] },
    };
    const kinds = checkClusterInvariants([pod], [successor, other]).map((v) => v.kind);
    expect(kinds).to.include('address-on-two-nncs');
    const withoutRecord = { ...successor, metadata: { name: 'node-a', namespace: 'kube-system' } };
    expect(checkClusterInvariants([pod], [withoutRecord]).map((v) => v.kind)).to.deep.equal([
      'ip-not-in-nnc',
    ]);
  });

  it('detects an IP held by two pods', () => {
    fc.assert(
      fc.property(worldArb, fc.nat(), (w, pick) => {
        const held = heldPods(w);
        fc.pre(held.length > 0);
        const victim = held[pick % held.length]!;
        const node = victim.spec!.nodeName!;
        w.pods.push({
          metadata: { name: 'intruder', namespace: 'default' },
          spec: { nodeName: node },
          status: { phase: 'Running', podIP: victim.status!.podIP! },
        });
        const v = checkClusterInvariants(w.pods, w.nncs);
        expect(v.map((x) => x.kind)).to.deep.equal(['ip-held-twice']);
        expect(v[0]!.ip).to.equal(victim.status!.podIP);
        expect(v[0]!.pods).to.include('default/intruder');
      }),
    );
  });

  it('detects a Running pod without an IP', () => {
    fc.assert(
      fc.property(worldArb, fc.nat(), (w, pick) => {
        const held = heldPods(w);
        fc.pre(held.length > 0);
        const victim = held[pick % held.length]!;
        victim.status = { phase: 'Running' };
        const v = checkClusterInvariants(w.pods, w.nncs);
        expect(v.map((x) => x.kind)).to.deep.equal(['running-without-ip']);
      }),
    );
  });

  it('detects a pod IP missing from its NNC status, and a node without NNC', () => {
    fc.assert(
      fc.property(worldArb, fc.nat(), (w, pick) => {
        const held = heldPods(w);
        fc.pre(held.length > 0);
        const victim = held[pick % held.length]!;
        const ip = victim.status!.podIP!;
        const nnc = w.nncs.find((n) => n.metadata.name === victim.spec!.nodeName)!;
        const nc = nnc.status!.networkContainers![0]!;
        nc.ipAssignments = nc.ipAssignments!.filter((a) => a.ip !== ip);
        const v = checkClusterInvariants(w.pods, w.nncs);
        expect(v).to.have.length(1);
        expect(v[0]).to.include({ kind: 'ip-not-in-nnc', ip, node: victim.spec!.nodeName });
      }),
    );
    const lonely: PodSnapshot = {
      metadata: { name: 'x', namespace: 'default' },
      spec: { nodeName: 'ghost' },
      status: { phase: 'Running', podIP: '10.9.9.9' },
    };
    const v = checkClusterInvariants([lonely], []);
    expect(v[0]!.message).to.equal('pod default/x holds 10.9.9.9, but node ghost has no NNC');
  });

  it('detects a held IP listed in spec.ipsNotInUse', () => {
    fc.assert(
      fc.property(worldArb, fc.nat(), (w, pick) => {
        const held = heldPods(w);
        fc.pre(held.length > 0);
        const victim = held[pick % held.length]!;
        const ip = victim.status!.podIP!;
        const nnc = w.nncs.find((n) => n.metadata.name === victim.spec!.nodeName)!;
        nnc.spec!.ipsNotInUse = [...nnc.spec!.ipsNotInUse!, `id-${ip}`];
        const v = checkClusterInvariants(w.pods, w.nncs);
        expect(v.map((x) => x.kind)).to.deep.equal(['held-ip-released']);
        expect(v[0]!.ip).to.equal(ip);
      }),
    );
  });

  it('detects an address in the status of two NNCs', () => {
    fc.assert(
      fc.property(worldArb, fc.nat(), fc.nat(), (w, from, to) => {
        fc.pre(w.nncs.length > 1);
        const a = w.nncs[from % w.nncs.length]!;
        const b = w.nncs.filter((n) => n !== a)[to % (w.nncs.length - 1)]!;
        const ip = a.status!.networkContainers![0]!.ipAssignments![0]!.ip;
        // b's fulfiller handed out a's first address again, under an id of its own.
        b.status!.networkContainers![0]!.ipAssignments!.push({ name: 'dup-id', ip });
        const v = checkClusterInvariants(w.pods, w.nncs);
        const shared = v.filter((x) => x.kind === 'address-on-two-nncs');
        expect(shared).to.have.length(1);
        expect(shared[0]).to.include({ ip });
        expect(shared[0]!.nncs).to.deep.equal([a.metadata.name, b.metadata.name].sort());
      }),
    );
  });

  it('keeps only violations seen in two consecutive snapshots', () => {
    const pod: PodSnapshot = {
      metadata: { name: 'a', namespace: 'default' },
      spec: { nodeName: 'n' },
      status: { phase: 'Running' },
    };
    const first = checkClusterInvariants([pod], []);
    const other = checkClusterInvariants(
      [{ ...pod, metadata: { name: 'b', namespace: 'default' } }],
      [],
    );
    expect(persistentViolations(first, checkClusterInvariants([pod], []))).to.have.length(1);
    expect(persistentViolations(first, other)).to.deep.equal([]);
    expect(persistentViolations([], first)).to.deep.equal([]);
  });
});
