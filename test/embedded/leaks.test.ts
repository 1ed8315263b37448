// The embedded run's leak figures, purely: which run has leaks, the check of
// a rebuilt store against the running pods, what is still leaked, the sums
// and the report lines.
import { expect } from 'chai';
import {
  checkRebuilt,
  leakLines,
  runLeaks,
  stillLeaked,
  sumLeakCounts,
} from '../../harness/embedded/leaks.ts';
import type { IpRecord } from '../../src/ipstore/types.ts';
import type { PodSnapshot } from '../../src/sim/invariants.ts';

const pod = (name: string, node: string, ip?: string, phase = 'Running'): PodSnapshot => ({
  metadata: { name, namespace: 'w' },
  spec: { nodeName: node },
  status: { phase, ...(ip ? { podIP: ip, podIPs: [{ ip }] } : {}) },
});
const held = (ip: string, name: string): IpRecord => ({
  id: ip,
  ip,
  ncId: 'nc',
  state: 'Assigned',
  updatedAt: 0,
  pod: {
    podInterfaceID: `${name}-if`,
    infraContainerID: 'adopted',
    podName: name,
    podNamespace: 'w',
  },
});

describe('embedded/leaks', () => {
  it('runs with leaks when the scenario has a section or --leak-rate asks; --leak-rate wins', () => {
    expect(runLeaks(undefined, undefined)).to.equal(undefined);
    expect(runLeaks(undefined, 0)).to.equal(undefined);
    expect(runLeaks(undefined, 0.2)).to.deep.equal({
      dropReleaseRate: 0.2,
      graceSeconds: 5,
      storeLosses: [],
    });
    const scenario = {
      dropReleaseRate: 0.3,
      graceSeconds: 3,
      storeLosses: [{ at: 9, nodes: [1] }],
    };
    expect(runLeaks(scenario, 0)).to.deep.equal({ ...scenario, dropReleaseRate: 0 });
    expect(runLeaks(scenario, undefined)).to.deep.equal(scenario);
  });

  it('a rebuilt store holds every running pod its reported address; what it misses is named', () => {
    const pods = [
      pod('a', 'n0', '10.0.0.1'),
      pod('b', 'n0', '10.0.0.2'),
      pod('c', 'n0'), // no address yet
      pod('d', 'n0', '10.0.0.4', 'Succeeded'),
      pod('e', 'n1', '10.0.0.5'),
    ];
    expect(checkRebuilt('n0', pods, [held('10.0.0.1', 'a'), held('10.0.0.2', 'x')])).to.deep.equal({
      runningPods: 2,
      addresses: 2,
      held: 1,
      missing: ['w/b 10.0.0.2'],
    });
  });

  it('a dropped DEL is still leaked while the store holds its IP for its gone pod', () => {
    const dropped = [
      { node: 'n0', namespace: 'w', name: 'gone', ips: ['10.0.0.1'], why: 'deleted' as const },
      { node: 'n0', namespace: 'w', name: 'done', ips: ['10.0.0.2'], why: 'completed' as const },
      { node: 'n0', namespace: 'w', name: 'back', ips: ['10.0.0.3'], why: 'deleted' as const },
    ];
    const stores = new Map([['n0', [held('10.0.0.1', 'gone'), held('10.0.0.3', 'back')]]]);
    // 'back' is a live pod of the same name again: what it holds is its own.
    expect(stillLeaked(dropped, stores, [pod('back', 'n0', '10.0.0.3')])).to.equal(1);
  });

  it('sums the counts of every sidecar and renders the report lines', () => {
    const one = {
      reclaimed: { 'pod-deleted': 2, 'pod-completed': 1, 'sandbox-recreated': 0 },
      adopted: 3,
      conflicts: 0,
    };
    const sum = sumLeakCounts([one, { ...one, adopted: 1, conflicts: 1 }]);
    expect(sum).to.deep.equal({
      reclaimed: { 'pod-deleted': 4, 'pod-completed': 2, 'sandbox-recreated': 0 },
      adopted: 4,
      conflicts: 1,
    });
    const lines = leakLines({
      dropReleaseRate: 0.3,
      graceSeconds: 5,
      releasesDropped: 6,
      reclaimed: sum.reclaimed,
      stillLeaked: 0,
      adopted: 4,
      conflicts: 1,
      storeLosses: [
        {
          node: 'n0',
          atSeconds: 30,
          runningPods: 4,
          addresses: 4,
          held: 4,
          missing: [],
          adopted: 4,
        },
      ],
    });
    expect(lines).to.deep.equal([
      '  leaked IPs                   6 CNI DELs dropped (rate 0.3), 6 reclaimed after a 5 s grace (pod-deleted 4, pod-completed 2, sandbox-recreated 0), 0 still leaked',
      '  lost stores                  1 lost, 1 rebuilt from the pods (4 of the 4 addresses of 4 running pods held again; 4 adoptions, 1 conflicts)',
    ]);
  });
});
