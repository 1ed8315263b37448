// The built-in workload scenarios. Each fits in well under two minutes at its
// default node count, with the fulfiller's default scaler (batch 16, request
// threshold 50 %). `default` is the one `make run` shows: a scale-up, a burst
// that runs the pod subnet out (with its suggested /24 and three nodes), and
// the scale-down once the Job pods complete and are deleted.
import { parseScenario, type Scenario } from './scenario.ts';

type Doc = Record<string, unknown>;

const DOCS: Record<string, () => Doc> = {
  default: () => ({
    name: 'default',
    description:
      'scale-up, a Job burst that exhausts the pod subnet, completion and scale-down, in 85 s',
    durationSeconds: 85,
    nodes: 3,
    podSubnet: '10.240.0.0/24',
    steps: [
      { at: 0, create: 6, group: 'web' },
      { at: 5, create: 20, over: 6, group: 'web' },
      { at: 25, create: 50, over: 10, group: 'batch' },
      { at: 50, complete: 'all', over: 3, group: 'batch' },
      { at: 58, delete: 'all', group: 'batch' },
      { at: 65, delete: 20, over: 4, group: 'web' },
    ],
  }),
  burst: () => ({
    name: 'burst',
    description: 'four pods per node, a burst of 60 more, then back to four',
    durationSeconds: 60,
    nodes: 2,
    steps: [
      { at: 0, create: 4, group: 'base' },
      { at: 5, create: 60, over: 5, group: 'burst' },
      { at: 35, delete: 'all', group: 'burst' },
    ],
  }),
  churn: () => {
    const steps: Doc[] = [{ at: 0, create: 30, group: 'app' }];
    // Every 5 s six new pods arrive and the six oldest leave: steady demand, high IP turnover.
    for (let k = 0; k < 11; k += 1) {
      steps.push({ at: 5 + 5 * k, create: 6, over: 2, group: 'app' });
      steps.push({ at: 6 + 5 * k, delete: 6, over: 2, group: 'app' });
    }
    return {
      name: 'churn',
      description: '30 pods per node, six replaced every five seconds',
      durationSeconds: 75,
      nodes: 2,
      steps,
    };
  },
  oscillation: () => {
    const steps: Doc[] = [{ at: 0, create: 10, group: 'base' }];
    // Four waves of 40 pods, 10 s up and 10 s down: a pool that should not thrash.
    for (let k = 0; k < 4; k += 1) {
      steps.push({ at: 5 + 20 * k, create: 40, over: 3, group: 'wave' });
      steps.push({ at: 15 + 20 * k, delete: 'all', over: 3, group: 'wave' });
    }
    return {
      name: 'oscillation',
      description: 'demand swings between 10 and 50 pods per node every 20 seconds',
      durationSeconds: 95,
      nodes: 2,
      steps,
    };
  },
  jobs: () => {
    const steps: Doc[] = [{ at: 0, create: 10, group: 'app' }];
    // Three waves of 30 Job pods: they complete (phase Succeeded, no longer
    // demand) and are cleaned up a few seconds later.
    for (const start of [5, 30, 55]) {
      steps.push({ at: start, create: 30, over: 2, group: 'job' });
      steps.push({ at: start + 12, complete: 'all', over: 2, group: 'job' });
      steps.push({ at: start + 18, delete: 'all', group: 'job' });
    }
    return {
      name: 'jobs',
      description: 'waves of 30 Job pods that complete and are deleted, over 10 steady pods',
      durationSeconds: 85,
      nodes: 2,
      steps,
    };
  },
  exhaustion: () => ({
    name: 'exhaustion',
    description: 'demand outgrows a /26 pod subnet, pods wait for IPs, then demand falls back',
    durationSeconds: 80,
    nodes: 2,
    podSubnet: '10.240.0.0/26',
    steps: [
      { at: 0, create: 10, group: 'app' },
      { at: 5, create: 40, over: 10, group: 'surge' },
      { at: 45, delete: 35, over: 5, group: 'surge' },
    ],
  }),
  leaky: () => ({
    name: 'leaky',
    description:
      'kubelets drop 30 % of CNI DELs and node-0 loses its IP store: leaks reclaimed after a 5 s grace, the store rebuilt from the pods, in 60 s',
    durationSeconds: 60,
    nodes: 2,
    steps: [
      { at: 0, create: 20, over: 4, group: 'web' },
      { at: 6, create: 20, over: 4, group: 'job' },
      { at: 14, complete: 'all', over: 4, group: 'job' },
      { at: 22, delete: 'all', group: 'job' },
      { at: 26, create: 10, over: 4, group: 'web' },
      { at: 34, delete: 15, over: 6, group: 'web' },
      { at: 42, create: 5, over: 3, group: 'web' },
    ],
    // The last DEL is dropped by 40 s: its IP is reclaimed well before the end.
    leaks: { dropReleaseRate: 0.3, graceSeconds: 5, loseStore: [{ at: 30, nodes: [0] }] },
  }),
  // Issue 43, decision 0035: run with --backend azure --azure-layout node-subnets,
  // where node-1's NIC is in the scenario's small pod subnet and node-0 and
  // node-2 in 10.224.0.0/16. node-1 runs its subnet dry while holding the
  // fewest pods; new pods come without a node, and a scheduler that does not
  // know about addresses sends them to node-1 (the most free room), where
  // they wait until node-1's batch completes. With the schedule signal
  // (POOL_MONITOR_SCHEDULE_SIGNAL=false turns it off) node-1 is tainted and
  // they go where addresses are.
  'subnet-dry': () => ({
    name: 'subnet-dry',
    description:
      "one node's subnet runs dry while the others' has room; new pods arrive without a node, in 75 s",
    durationSeconds: 75,
    nodes: 3,
    podSubnet: '10.240.0.0/27',
    steps: [
      { at: 0, create: 30, over: 4, group: 'web', nodes: [0, 2] },
      { at: 0, create: 22, over: 4, group: 'batch', nodes: [1] },
      { at: 20, create: 10, over: 20, group: 'new', nodes: [1], unbound: true },
      { at: 55, complete: 'all', over: 2, group: 'batch', nodes: [1] },
    ],
  }),
  'scale-to-zero': () => ({
    name: 'scale-to-zero',
    description: '40 pods per node, then every pod deleted: the pool shrinks to its floor',
    durationSeconds: 70,
    nodes: 2,
    steps: [
      { at: 0, create: 40, over: 5, group: 'app' },
      { at: 30, delete: 'all', over: 2 },
    ],
  }),
  // What `embedded --netns` runs unless told otherwise: small, for every pod
  // is a network namespace and every ADD and DEL the real plugin chain.
  netns: () => ({
    name: 'netns',
    description: 'four pods per node, four more that are deleted again, in 24 s (for --netns)',
    durationSeconds: 24,
    nodes: 2,
    steps: [
      { at: 0, create: 4, group: 'web' },
      { at: 4, create: 4, over: 3, group: 'job' },
      { at: 10, delete: 'all', over: 2, group: 'job' },
    ],
  }),
};

export const BUILT_IN_SCENARIO_NAMES: readonly string[] = Object.keys(DOCS);
export const DEFAULT_SCENARIO = 'default';

/** A built-in scenario by name, or undefined. */
export function builtInScenario(name: string): Scenario | undefined {
  const doc = Object.hasOwn(DOCS, name) ? DOCS[name] : undefined;
  return doc ? parseScenario(doc(), `built-in scenario ${name}`) : undefined;
}
