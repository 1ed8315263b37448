// Workload scenarios: a timeline of pod actions per node. A step creates,
// completes (phase Succeeded, like a finished Job) or deletes pods on every
// node (or the listed ones), at once or spread evenly over `over` seconds.
// Scenario files are untrusted input: validation names the bad field and
// accepts nothing it does not understand. An optional `leaks:` section adds
// dropped CNI DELs and lost node stores (leaks.ts).
import { parseLeaks, type ScenarioLeaks } from './leaks.ts';

export type PodActionKind = 'create' | 'complete' | 'delete';
export const POD_ACTION_KINDS: readonly PodActionKind[] = ['create', 'complete', 'delete'];

export interface ScenarioStep {
  /** Seconds from the start of the run. */
  at: number;
  action: PodActionKind;
  /** Pods per node; 'all' completes or deletes every matching pod. */
  count: number | 'all';
  /** Seconds over which the pods are spread evenly; 0 = all at once. */
  over: number;
  /** Pod group (label `sim.pool-monitor/group`); create defaults to 'app', others match any. */
  group?: string;
  /** Node indexes (0-based) the step applies to; absent = every node. Indexes past the run's node count are ignored. */
  nodes?: number[];
  /**
   * Create pods without a node, for the scheduler to place (the count is per
   * listed node still, which only names the pods); default false: bound.
   */
  unbound?: boolean;
}

export interface Scenario {
  name: string;
  description: string;
  /** Seconds the run lasts: past the last step, so pools can settle. */
  durationSeconds: number;
  /** Node count the scenario was designed for (`--nodes` wins). */
  nodes: number;
  /**
   * Pod subnet the scenario was designed for: its size decides whether the
   * subnet runs out (the fulfiller publishes exhaustion). Absent: no opinion.
   */
  podSubnet?: string;
  steps: ScenarioStep[];
  /** Dropped CNI DELs and lost stores (leaks.ts); absent: none. */
  leaks?: ScenarioLeaks;
}

export class ScenarioError extends Error {
  override readonly name = 'ScenarioError';
}

const NAME_RE = /^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/;
const CIDR_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;
const TOP_FIELDS = new Set([
  'name',
  'description',
  'durationSeconds',
  'nodes',
  'podSubnet',
  'steps',
  'leaks',
]);
const STEP_FIELDS = new Set([
  'at',
  'create',
  'complete',
  'delete',
  'over',
  'group',
  'nodes',
  'unbound',
]);
export const MAX_NODES = 5000;
export const MAX_PODS_PER_STEP = 10_000;

const show = (v: unknown): string =>
  typeof v === 'string' ? `"${v}"` : (JSON.stringify(v) ?? String(v));

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates a parsed scenario document (from YAML or JSON) and returns the
 * scenario; throws ScenarioError `SOURCE: FIELD: problem, got VALUE`.
 * Step form: `{at, create|complete|delete: N|'all', over?, group?, nodes?}`.
 */
export function parseScenario(doc: unknown, source = 'scenario'): Scenario {
  const fail = (field: string, problem: string, value?: unknown): never => {
    const got = value !== undefined ? `, got ${show(value)}` : '';
    throw new ScenarioError(`${source}: ${field}: ${problem}${got}`);
  };
  if (!isRecord(doc))
    fail('(document)', 'must be a mapping with name, durationSeconds and steps', doc);
  const d = doc as Record<string, unknown>;
  for (const key of Object.keys(d)) {
    if (!TOP_FIELDS.has(key))
      fail(key, `unknown field (expected one of ${[...TOP_FIELDS].join(', ')})`);
  }

  const name = d.name;
  if (typeof name !== 'string' || !NAME_RE.test(name)) {
    fail('name', 'must be lowercase letters, digits and dashes (at most 40)', name);
  }
  const description = d.description ?? '';
  if (typeof description !== 'string') fail('description', 'must be a string', description);
  const duration = d.durationSeconds;
  if (
    typeof duration !== 'number' ||
    !Number.isFinite(duration) ||
    duration <= 0 ||
    duration > 86_400
  ) {
    fail('durationSeconds', 'must be a number of seconds in (0, 86400]', duration);
  }
  const nodes = d.nodes ?? 1;
  if (typeof nodes !== 'number' || !Number.isInteger(nodes) || nodes < 1 || nodes > MAX_NODES) {
    fail('nodes', `must be an integer from 1 to ${MAX_NODES}`, nodes);
  }
  const podSubnet = d.podSubnet;
  if (podSubnet !== undefined) {
    const m = typeof podSubnet === 'string' ? CIDR_RE.exec(podSubnet) : null;
    const ok =
      m !== null &&
      m.slice(1, 5).every((o) => Number(o) <= 255) &&
      Number(m[5]) >= 8 &&
      Number(m[5]) <= 30;
    if (!ok) fail('podSubnet', 'must be an IPv4 CIDR with a prefix from /8 to /30', podSubnet);
  }
  if (!Array.isArray(d.steps) || d.steps.length === 0)
    fail('steps', 'must be a non-empty list', d.steps);

  const steps = (d.steps as unknown[]).map((raw, i) =>
    parseStep(raw, `steps[${i}]`, duration as number, fail),
  );
  const scenario: Scenario = {
    name: name as string,
    description: description as string,
    durationSeconds: duration as number,
    nodes: nodes as number,
    steps,
  };
  if (podSubnet !== undefined) scenario.podSubnet = podSubnet as string;
  if (d.leaks !== undefined) scenario.leaks = parseLeaks(d.leaks, duration as number, fail);
  return scenario;
}

function parseStep(
  raw: unknown,
  where: string,
  duration: number,
  fail: (field: string, problem: string, value?: unknown) => never,
): ScenarioStep {
  if (!isRecord(raw)) return fail(where, 'must be a mapping like {at: 0, create: 10}', raw);
  for (const key of Object.keys(raw)) {
    if (!STEP_FIELDS.has(key)) {
      fail(`${where}.${key}`, `unknown field (expected one of ${[...STEP_FIELDS].join(', ')})`);
    }
  }
  const at = raw.at;
  if (typeof at !== 'number' || !Number.isFinite(at) || at < 0 || at > duration) {
    fail(`${where}.at`, `must be a number of seconds from 0 to durationSeconds (${duration})`, at);
  }
  const kinds = POD_ACTION_KINDS.filter((k) => raw[k] !== undefined);
  if (kinds.length !== 1) {
    fail(
      where,
      `needs exactly one of create, complete, delete (has ${kinds.length === 0 ? 'none' : kinds.join(', ')})`,
    );
  }
  const action = kinds[0] as PodActionKind;
  const count = raw[action];
  const countOk =
    (count === 'all' && action !== 'create') ||
    (typeof count === 'number' &&
      Number.isInteger(count) &&
      count >= 0 &&
      count <= MAX_PODS_PER_STEP);
  if (!countOk) {
    fail(
      `${where}.${action}`,
      action === 'create'
        ? `must be an integer from 0 to ${MAX_PODS_PER_STEP}`
        : `must be an integer from 0 to ${MAX_PODS_PER_STEP} or "all"`,
      count,
    );
  }
  const over = raw.over ?? 0;
  if (
    typeof over !== 'number' ||
    !Number.isFinite(over) ||
    over < 0 ||
    (at as number) + over > duration
  ) {
    fail(
      `${where}.over`,
      `must be seconds ≥ 0 that end within durationSeconds (${duration})`,
      over,
    );
  }
  const step: ScenarioStep = {
    at: at as number,
    action,
    count: count as number | 'all',
    over: over as number,
  };
  if (raw.group !== undefined) {
    if (typeof raw.group !== 'string' || !NAME_RE.test(raw.group)) {
      fail(
        `${where}.group`,
        'must be lowercase letters, digits and dashes (at most 40)',
        raw.group,
      );
    }
    step.group = raw.group as string;
  }
  if (raw.nodes !== undefined) {
    const list = raw.nodes;
    if (
      !Array.isArray(list) ||
      list.length === 0 ||
      !list.every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < MAX_NODES)
    ) {
      fail(`${where}.nodes`, 'must be a non-empty list of node indexes (0-based integers)', list);
    }
    step.nodes = [...new Set(list as number[])];
  }
  if (raw.unbound !== undefined) {
    if (typeof raw.unbound !== 'boolean' || (raw.unbound && action !== 'create'))
      fail(`${where}.unbound`, 'must be true or false, and only on a create step', raw.unbound);
    if (raw.unbound) step.unbound = true;
  }
  return step;
}
