// A scenario's leaks (optional `leaks:` section): the simulated kubelets drop
// a share of their CNI DELs, and nodes lose their IP store at given moments
// (their sidecar restarts on an empty state dir). The sidecars run with a
// short leak grace so the reclaims and adoptions show within the run.
//   leaks: {dropReleaseRate: 0.3, graceSeconds: 5, loseStore: [{at: 30, nodes: [0]}]}

export interface StoreLossStep {
  /** Seconds from the start of the run. */
  at: number;
  /** Node indexes (0-based) whose store is lost; indexes past the run's node count are ignored. */
  nodes: number[];
}

export interface ScenarioLeaks {
  /** Share (0-1) of CNI DELs the simulated kubelets drop. */
  dropReleaseRate: number;
  /** The sidecars' --leak-grace during the run. */
  graceSeconds: number;
  storeLosses: StoreLossStep[];
}

/** The embedded run's leak grace when a scenario (or --leak-rate) asks for leaks. */
export const DEFAULT_SCENARIO_LEAK_GRACE_SECONDS = 5;

const FIELDS = new Set(['dropReleaseRate', 'graceSeconds', 'loseStore']);

type Fail = (field: string, problem: string, value?: unknown) => never;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

export function parseLeaks(raw: unknown, duration: number, fail: Fail): ScenarioLeaks {
  if (!isRecord(raw)) {
    return fail('leaks', 'must be a mapping like {dropReleaseRate: 0.3, graceSeconds: 5}', raw);
  }
  for (const key of Object.keys(raw)) {
    if (!FIELDS.has(key))
      fail(`leaks.${key}`, `unknown field (expected one of ${[...FIELDS].join(', ')})`);
  }
  const rate = raw.dropReleaseRate ?? 0;
  if (!finite(rate) || rate < 0 || rate > 1)
    fail('leaks.dropReleaseRate', 'must be a share from 0 to 1', rate);
  const grace = raw.graceSeconds ?? DEFAULT_SCENARIO_LEAK_GRACE_SECONDS;
  if (!finite(grace) || grace < 0 || grace > duration)
    fail('leaks.graceSeconds', `must be seconds from 0 to durationSeconds (${duration})`, grace);
  const steps = raw.loseStore ?? [];
  if (!Array.isArray(steps)) fail('leaks.loseStore', 'must be a list of {at, nodes}', steps);
  const storeLosses = (steps as unknown[]).map((step, i): StoreLossStep => {
    const where = `leaks.loseStore[${i}]`;
    if (!isRecord(step)) return fail(where, 'must be a mapping like {at: 30, nodes: [0]}', step);
    for (const key of Object.keys(step)) {
      if (key !== 'at' && key !== 'nodes')
        fail(`${where}.${key}`, 'unknown field (expected at, nodes)');
    }
    if (!finite(step.at) || step.at < 0 || step.at > duration)
      fail(`${where}.at`, `must be seconds from 0 to durationSeconds (${duration})`, step.at);
    const nodes = step.nodes ?? [0];
    if (
      !Array.isArray(nodes) ||
      nodes.length === 0 ||
      !nodes.every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0)
    ) {
      fail(`${where}.nodes`, 'must be a non-empty list of node indexes (0-based integers)', nodes);
    }
    return { at: step.at as number, nodes: [...new Set(nodes as number[])] };
  });
  return { dropReleaseRate: rate as number, graceSeconds: grace as number, storeLosses };
}
