// The sampler's bookkeeping, on hand-made snapshots: timeline, exhaustion
// first/recovered times, persistent (not one-off) invariant violations, and
// the scale-up/scale-down verdict; plus the report lines built from them.
import { expect } from 'chai';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import type { PodSnapshot } from '../../src/sim/invariants.ts';
import { ClusterSampler, type ClusterSnapshot } from '../../harness/embedded/sampler.ts';
import { defaultSampleMs, exhaustionLine } from '../../harness/embedded/run.ts';
import { inBatches, nodeAddress } from '../../harness/embedded/cluster.ts';

const nnc = (
  node: string,
  requested: number,
  ips: string[],
  notInUse: string[] = [],
): NodeNetworkConfig =>
  ({
    metadata: { name: node },
    spec: { requestedIPCount: requested, ipsNotInUse: notInUse },
    status: {
      networkContainers: [
        {
          id: `nc-${node}`,
          assignmentMode: 'dynamic',
          ipAssignments: ips.map((ip) => ({ name: `id-${ip}`, ip })),
        },
      ],
    },
  }) as NodeNetworkConfig;

const pod = (name: string, node: string, phase: string, ip?: string): PodSnapshot => ({
  metadata: { name, namespace: 'workload' },
  spec: { nodeName: node },
  status: { phase, ...(ip ? { podIP: ip } : {}) },
});

const snap = (
  pods: PodSnapshot[],
  nncs: NodeNetworkConfig[],
  exhausted = false,
): ClusterSnapshot => ({
  pods,
  nncs,
  subnets: [{ metadata: { name: 's' }, status: { exhausted } }],
});

describe('embedded: ClusterSampler', () => {
  it('adds one timeline sample per call, summed over nodes', () => {
    const s = new ClusterSampler();
    s.sample(
      0,
      snap([pod('a', 'n0', 'Running', '10.0.0.1')], [nnc('n0', 16, ['10.0.0.1', '10.0.0.2'])]),
    );
    expect(s.samples).to.deep.equal([{ t: 0, demand: 1, requested: 16, allocated: 2 }]);
    expect(s.churn.totals()).to.deep.equal({ allocated: 2, released: 0 });
  });

  it('records when a subnet was first exhausted and when it recovered', () => {
    const s = new ClusterSampler();
    const n = [nnc('n0', 16, [])];
    s.sample(0, snap([], n));
    s.sample(1.04, snap([], n, true));
    s.sample(2, snap([], n, true));
    expect(s.exhaustionSummary()).to.include({
      happened: true,
      firstAtSeconds: 1,
      recoveredAtSeconds: null,
    });
    s.sample(3, snap([], n));
    expect(s.exhaustionSummary()).to.deep.equal({
      happened: true,
      firstAtSeconds: 1,
      recoveredAtSeconds: 3,
      exhaustedSamples: 2,
    });
    expect(exhaustionLine(s.exhaustionSummary())).to.match(
      /yes, CSS exhausted at 1 s, recovered at 3 s/,
    );
  });

  it('says so when the subnet never ran low', () => {
    const s = new ClusterSampler();
    s.sample(0, snap([], [nnc('n0', 16, [])]));
    expect(s.exhaustionSummary().happened).to.equal(false);
    expect(exhaustionLine(s.exhaustionSummary())).to.match(/^\s+subnet exhaustion\s+no/);
  });

  it('reports a violation only when it persists into the next sample, and once', () => {
    const s = new ClusterSampler();
    const twice = [pod('a', 'n0', 'Running', '10.0.0.1'), pod('b', 'n0', 'Running', '10.0.0.1')];
    const n = [nnc('n0', 16, ['10.0.0.1'])];
    expect(s.sample(0, snap(twice, n))).to.deep.equal([]);
    expect(s.sample(1, snap([twice[0]!], n))).to.deep.equal([]); // gone: a one-off
    expect(s.sample(2, snap(twice, n))).to.deep.equal([]);
    const fresh = s.sample(3, snap(twice, n));
    expect(fresh.map((v) => v.kind)).to.deep.equal(['ip-held-twice']);
    expect(s.sample(4, snap(twice, n))).to.deep.equal([]);
    expect(s.violations).to.have.length(1);
  });

  it('a node without any NNC counts once that lasted 15 s while a fulfiller led', () => {
    const s = new ClusterSampler();
    const missing = snap([pod('a', 'n0', 'Running', '10.0.0.1')], []);
    // No fulfiller led from 0 to 20 s (chaos killed both): not counted.
    for (let t = 0; t <= 20; t++) expect(s.sample(t, missing, false)).to.deep.equal([]);
    // 14 s with one leading: still within the grace of a replacement.
    for (let t = 21; t <= 34; t++) expect(s.sample(t, missing, true)).to.deep.equal([]);
    const at35 = s.sample(35, missing, true);
    expect(at35.map((v) => [v.kind, v.nncMissing])).to.deep.equal([['ip-not-in-nnc', true]]);
    // It says when it began and how much of it counted: where to read the component log.
    expect(at35[0]!.message).to.match(/since 0 s of the run, 15 s of it while a fulfiller led\)$/);
    // The NNC back, then gone again: the clock starts over.
    const t = new ClusterSampler();
    t.sample(0, missing);
    t.sample(10, missing);
    t.sample(11, snap([pod('a', 'n0', 'Running', '10.0.0.1')], [nnc('n0', 16, ['10.0.0.1'])]));
    t.sample(12, missing);
    expect(t.sample(26, missing)).to.deep.equal([]);
    expect(t.sample(27, missing)).to.have.length(1);
  });

  it('catches a Running pod without an IP and a held IP marked for release', () => {
    const s = new ClusterSampler();
    const pods = [pod('a', 'n0', 'Running'), pod('b', 'n0', 'Running', '10.0.0.2')];
    const n = [nnc('n0', 16, ['10.0.0.2'], ['id-10.0.0.2'])];
    s.sample(0, snap(pods, n));
    const kinds = s
      .sample(1, snap(pods, n))
      .map((v) => v.kind)
      .sort();
    expect(kinds).to.deep.equal(['held-ip-released', 'running-without-ip']);
  });

  it('counts pods still waiting for an IP, ignoring finished ones', () => {
    const s = new ClusterSampler();
    s.sample(
      0,
      snap(
        [
          pod('a', 'n0', 'Pending'),
          pod('b', 'n0', 'Succeeded'),
          pod('c', 'n0', 'Running', '10.0.0.3'),
        ],
        [nnc('n0', 16, ['10.0.0.3'])],
      ),
    );
    expect(s.waitingPods()).to.equal(1);
  });

  it('tells scale-up and scale-down from the requested IPs', () => {
    const s = new ClusterSampler();
    const at = (t: number, requested: number) => s.sample(t, snap([], [nnc('n0', requested, [])]));
    at(0, 16);
    expect(s.scaling()).to.deep.equal({ up: false, down: false });
    at(1, 32);
    expect(s.scaling()).to.deep.equal({ up: true, down: false });
    at(2, 16);
    expect(s.scaling()).to.deep.equal({ up: true, down: true });
  });
});

describe('embedded: helpers', () => {
  it('samples every second up to 200 nodes, slower above, at most every 5 s', () => {
    expect(defaultSampleMs(3)).to.equal(1000);
    expect(defaultSampleMs(200)).to.equal(1000);
    expect(defaultSampleMs(1000)).to.equal(5000);
    expect(defaultSampleMs(100_000)).to.equal(5000);
  });

  it('gives every node a distinct InternalIP', () => {
    const ips = new Set(Array.from({ length: 5000 }, (_, i) => nodeAddress(i)));
    expect(ips.size).to.equal(5000);
  });

  it('runs work with bounded concurrency and keeps the order of results', async () => {
    let inFlight = 0;
    let most = 0;
    const out = await inBatches([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5 * (n % 3)));
      inFlight -= 1;
      return n * 10;
    });
    expect(out).to.deep.equal([10, 20, 30, 40, 50, 60, 70]);
    expect(most).to.equal(3);
  });
});
