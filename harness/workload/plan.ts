// The pure planner: scenario + node names → the timed list of pod actions,
// each naming the exact pod. It replays the scenario against a model of the
// pods on every node, so "complete 10" picks the ten oldest running pods and
// "delete 10" the oldest finished ones first (as a Job controller's cleanup
// would), then the oldest running. Same input, same plan.
import type { PodActionKind, Scenario, ScenarioStep } from './scenario.ts';

export interface PlannedAction {
  /** Milliseconds from the start of the run. */
  atMs: number;
  kind: PodActionKind;
  node: string;
  nodeIndex: number;
  /** Pod name, unique in the run: `<group>-<nodeIndex>-<seq>`. */
  pod: string;
  group: string;
  /** Created without a node: the scheduler places it (`node` only names it). */
  unbound?: boolean;
}

export interface Plan {
  scenario: string;
  durationMs: number;
  actions: PlannedAction[];
  /** Complete/delete actions that found no matching pod and were dropped. */
  skipped: number;
  /** Per kind, how many actions the plan holds. */
  totals: Record<PodActionKind, number>;
}

export const DEFAULT_GROUP = 'app';

interface PodRec {
  name: string;
  group: string;
}

interface NodeModel {
  running: PodRec[];
  finished: PodRec[];
  seq: Map<string, number>;
}

/** One pending unit of work: a single pod action, or an 'all' sweep to expand. */
interface Intent {
  atMs: number;
  order: number;
  step: ScenarioStep;
  nodeIndex: number;
  sweep: boolean;
}

/** Minimal binary heap ordered by (atMs, order): plans of 100k actions stay fast. */
class IntentQueue {
  private readonly items: Intent[] = [];
  private static less(a: Intent, b: Intent): boolean {
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.order < b.order);
  }
  get size(): number {
    return this.items.length;
  }
  push(item: Intent): void {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!IntentQueue.less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): Intent | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && IntentQueue.less(a[l]!, a[m]!)) m = l;
        if (r < a.length && IntentQueue.less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

const matches = (group: string | undefined) => (p: PodRec) =>
  group === undefined || p.group === group;

/** Times of `count` actions spread evenly over `over` seconds from `at`. */
export function spreadTimes(at: number, over: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => Math.round((at + (over * i) / count) * 1000));
}

/** Turns a scenario into timed pod actions for the given nodes. */
export function planScenario(scenario: Scenario, nodeNames: readonly string[]): Plan {
  if (nodeNames.length === 0) throw new RangeError('planScenario: no nodes');
  const models: NodeModel[] = nodeNames.map(() => ({ running: [], finished: [], seq: new Map() }));
  const queue = new IntentQueue();
  let order = 0;

  scenario.steps.forEach((step) => {
    const targets = (step.nodes ?? nodeNames.map((_, i) => i)).filter((i) => i < nodeNames.length);
    for (const nodeIndex of targets) {
      if (step.count === 'all') {
        queue.push({
          atMs: Math.round(step.at * 1000),
          order: order++,
          step,
          nodeIndex,
          sweep: true,
        });
      } else {
        for (const atMs of spreadTimes(step.at, step.over, step.count)) {
          queue.push({ atMs, order: order++, step, nodeIndex, sweep: false });
        }
      }
    }
  });

  const actions: PlannedAction[] = [];
  const totals: Record<PodActionKind, number> = { create: 0, complete: 0, delete: 0 };
  let skipped = 0;
  for (let intent = queue.pop(); intent; intent = queue.pop()) {
    const { step, nodeIndex } = intent;
    const model = models[nodeIndex]!;
    const node = nodeNames[nodeIndex]!;
    if (intent.sweep) {
      const m = matches(step.group);
      const n =
        model.running.filter(m).length +
        (step.action === 'delete' ? model.finished.filter(m).length : 0);
      // Expanded intents keep this sweep's place among same-time work.
      for (const atMs of spreadTimes(step.at, step.over, n)) {
        queue.push({ atMs, order: intent.order, step, nodeIndex, sweep: false });
      }
      continue;
    }
    let pod: PodRec | undefined;
    if (step.action === 'create') {
      const group = step.group ?? DEFAULT_GROUP;
      const seq = (model.seq.get(group) ?? 0) + 1;
      model.seq.set(group, seq);
      pod = { name: `${group}-${nodeIndex}-${seq}`, group };
      model.running.push(pod);
    } else {
      const m = matches(step.group);
      const pick = (list: PodRec[]): PodRec | undefined => {
        const i = list.findIndex(m);
        return i < 0 ? undefined : list.splice(i, 1)[0];
      };
      if (step.action === 'complete') {
        pod = pick(model.running);
        if (pod) model.finished.push(pod);
      } else {
        pod = pick(model.finished) ?? pick(model.running);
      }
    }
    if (!pod) {
      skipped += 1;
      continue;
    }
    totals[step.action] += 1;
    actions.push({
      atMs: intent.atMs,
      kind: step.action,
      node,
      nodeIndex,
      pod: pod.name,
      group: pod.group,
      ...(step.action === 'create' && step.unbound ? { unbound: true } : {}),
    });
  }
  return {
    scenario: scenario.name,
    durationMs: Math.round(scenario.durationSeconds * 1000),
    actions,
    skipped,
    totals,
  };
}

/** Demand per node over the plan: pods created and neither completed nor deleted. */
export function plannedDemand(plan: Plan, nodeCount: number): number[] {
  const demand = Array<number>(nodeCount).fill(0);
  const finished = new Set<string>();
  for (const a of plan.actions) {
    if (a.kind === 'create') demand[a.nodeIndex]! += 1;
    else if (!finished.has(a.pod)) {
      demand[a.nodeIndex]! -= 1;
      finished.add(a.pod);
    }
  }
  return demand;
}
