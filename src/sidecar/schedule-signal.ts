// The schedule signal, decided purely (docs/decisions/0035): whether this
// node should attract new pods. A node that cannot serve another pod (no
// free address for it and no way to get one soon: its subnet exhausted, or
// its pool at the NNC's maxIPCount) carries the NoSchedule taint
// `pool-monitor.acn.azure.com/no-pod-ips`, which kube-scheduler's
// TaintToleration filter honours; so does a node whose pool is not usable
// yet (no NNC, or one the fulfiller has not finished). Pods already bound
// are never touched (NoSchedule, never NoExecute).
//
// Hysteresis: a change for a capacity reason (set or clear) comes at least
// HOLD_MS after the previous capacity change, so a pool whose demand
// oscillates across the boundary changes the signal at most once a minute.
// Readiness changes (a new node's pool becoming usable) are not held: they
// happen once. What the sidecar does not know yet (its watches have not
// listed) changes nothing.
//
// Effects (reading and patching the Node) live in schedule-signal-node.ts,
// the loop that runs this in schedule-signal-run.ts.
import type { StateCounts } from '../ipstore/types.ts';

export const TAINT_KEY = 'pool-monitor.acn.azure.com/no-pod-ips';
export const TAINT_EFFECT = 'NoSchedule';
/** The least time between two capacity changes of the signal. */
export const HOLD_MS = 60_000;

export type SignalReason = 'not-ready' | 'subnet-exhausted' | 'max-ip-count';
export const SIGNAL_REASONS: readonly SignalReason[] = [
  'not-ready',
  'subnet-exhausted',
  'max-ip-count',
];

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

/** Whether the node's pool is usable: unknown while the watches have not listed. */
export type Usability =
  { kind: 'unknown'; why: string } | { kind: 'not-usable'; why: string } | { kind: 'usable' };

/** The pool's figures the capacity is worked out from. */
export interface PoolFigures {
  /** Pods on the node that need an address (the monitor's demand). */
  demand: number;
  exhausted: boolean;
  /** The effective maxIPCount (the scaler's max). */
  max: number;
  counts: StateCounts;
  /**
   * The pool per address family (families.ts), each with its own subnet's
   * exhaustion: a pod needs one address of each, so the node can serve only
   * when every family can. Absent or empty: `counts` and `exhausted` are the
   * one family's.
   */
  families?: readonly { name: string; counts: StateCounts; exhausted: boolean }[];
}

export interface Capacity {
  /** Addresses free now or soon: Available and PendingProgramming. */
  free: number;
  /** Pods on the node that have no address yet: demand less Assigned. */
  waiting: number;
  /** Addresses left for one more pod: free less waiting. */
  headroom: number;
  /** Addresses the node holds (every state). */
  total: number;
  max: number;
  exhausted: boolean;
  /** The pool may grow soon: the subnet is not exhausted and the pool is under its cap. */
  canGrow: boolean;
  /** One more pod would get an address now or soon. */
  canServe: boolean;
  /** Of a dual-stack pool: the family these figures are (the one that serves least). */
  family?: string;
}

/**
 * What the node's capacity is: of a dual-stack pool, the family that serves
 * least (one that cannot serve, else the one with the least headroom),
 * since a pod needs an address of each. Pure.
 */
export function capacityOf(f: PoolFigures): Capacity {
  const families = f.families ?? [];
  if (families.length === 0) return familyCapacity(f);
  const each = families.map((fam) => ({
    ...familyCapacity({ ...f, counts: fam.counts, exhausted: fam.exhausted }),
    ...(families.length > 1 ? { family: fam.name } : {}),
  }));
  const worst = [...each].sort(
    (a, b) => Number(a.canServe) - Number(b.canServe) || a.headroom - b.headroom,
  )[0] as Capacity;
  return worst;
}

function familyCapacity(f: PoolFigures): Capacity {
  const c = f.counts;
  const total = c.Available + c.Assigned + c.PendingRelease + c.PendingProgramming;
  const free = c.Available + c.PendingProgramming;
  const waiting = Math.max(0, f.demand - c.Assigned);
  const headroom = free - waiting;
  const canGrow = !f.exhausted && total < f.max;
  return {
    free,
    waiting,
    headroom,
    total,
    max: f.max,
    exhausted: f.exhausted,
    canGrow,
    canServe: headroom >= 1 || canGrow,
  };
}

/** What the signal should be now. */
export type Want =
  | { kind: 'unknown'; why: string }
  | { kind: 'taint'; reason: SignalReason; why: string }
  | { kind: 'clear'; why: string };

/** The wanted signal from the pool's usability and capacity. Pure. */
export function wantOf(usability: Usability, capacity: Capacity | undefined): Want {
  if (usability.kind === 'unknown') return { kind: 'unknown', why: usability.why };
  if (usability.kind === 'not-usable' || capacity === undefined) {
    const why = usability.kind === 'not-usable' ? usability.why : 'no pool figures yet';
    return { kind: 'taint', reason: 'not-ready', why };
  }
  const k = capacity;
  const of = k.family !== undefined ? `${k.family}: ` : '';
  const figures = `${of}${k.free} free, ${k.waiting} pod(s) waiting, ${k.total}/${k.max} addresses`;
  if (k.canServe) {
    const how = k.headroom >= 1 ? 'a free address' : 'room to grow';
    return { kind: 'clear', why: `the pool can serve another pod (${how}; ${figures})` };
  }
  if (k.total >= k.max) {
    return {
      kind: 'taint',
      reason: 'max-ip-count',
      why: `no free address and the pool is at maxIPCount (${figures})`,
    };
  }
  return {
    kind: 'taint',
    reason: 'subnet-exhausted',
    why: `no free address and the ${k.family !== undefined ? `${k.family} ` : ''}subnet is exhausted (${figures})`,
  };
}

export interface SignalChange {
  at: number;
  to: 'tainted' | 'cleared';
  /** Tainted: why; cleared: 'ready' (was not-ready) or 'can-serve'. */
  reason: SignalReason | 'ready' | 'can-serve';
  why: string;
}

export interface SignalState {
  /** Our taint is on the Node (as last read or written); undefined before the first read. */
  tainted?: boolean;
  /** Why it is tainted, as last decided (or read from the taint's value). */
  reason?: SignalReason;
  /** When the signal last changed for a capacity reason: the hold runs from there. */
  capacityChangeAt?: number;
  lastChange?: SignalChange;
  changes: number;
}

export const initialSignalState = (): SignalState => ({ changes: 0 });

export type SignalStep =
  | { kind: 'none' }
  | { kind: 'read' }
  | { kind: 'hold'; until: number; want: Want }
  | { kind: 'change'; change: SignalChange; capacity: boolean };

/** What to do now, from the state, the wanted signal and the time. Pure. */
export function decideSignal(
  state: SignalState,
  want: Want,
  now: number,
  holdMs: number = HOLD_MS,
): SignalStep {
  if (want.kind === 'unknown') return { kind: 'none' };
  if (state.tainted === undefined) return { kind: 'read' };
  const taint = want.kind === 'taint';
  if (taint === state.tainted) return { kind: 'none' };
  const readiness = taint ? want.reason === 'not-ready' : state.reason === 'not-ready';
  const change: SignalChange = taint
    ? { at: now, to: 'tainted', reason: want.reason, why: want.why }
    : { at: now, to: 'cleared', reason: readiness ? 'ready' : 'can-serve', why: want.why };
  if (!readiness && state.capacityChangeAt !== undefined) {
    const until = state.capacityChangeAt + holdMs;
    if (now < until) return { kind: 'hold', until, want };
  }
  return { kind: 'change', change, capacity: !readiness };
}

/** The state once `step`'s change is on the Node. Pure. */
export function afterChange(
  state: SignalState,
  step: Extract<SignalStep, { kind: 'change' }>,
): SignalState {
  const { change } = step;
  const tainted = change.to === 'tainted';
  return {
    tainted,
    ...(tainted ? { reason: change.reason as SignalReason } : {}),
    ...(step.capacity
      ? { capacityChangeAt: change.at }
      : state.capacityChangeAt !== undefined
        ? { capacityChangeAt: state.capacityChangeAt }
        : {}),
    lastChange: change,
    changes: state.changes + 1,
  };
}

/** The state with the Node as read (our taint there or not). Pure. */
export function afterRead(state: SignalState, taint: Taint | undefined): SignalState {
  const { reason: _r, ...rest } = state;
  const reason = SIGNAL_REASONS.find((r) => r === taint?.value);
  return { ...rest, tainted: taint !== undefined, ...(reason ? { reason } : {}) };
}

/** The state while tainted with a want of another taint reason: the reason follows. */
export function withReason(state: SignalState, want: Want): SignalState {
  if (state.tainted === true && want.kind === 'taint' && state.reason !== want.reason)
    return { ...state, reason: want.reason };
  return state;
}

/** Our taint among the Node's, or undefined. */
export function ourTaint(taints: readonly Taint[] | undefined | null): Taint | undefined {
  return (taints ?? []).find((t) => t?.key === TAINT_KEY);
}

/**
 * The Node's taints with ours set (reason as its value, NoSchedule) or
 * removed; every other taint kept as it is, in its place.
 */
export function taintsWith(
  taints: readonly Taint[] | undefined | null,
  reason: SignalReason | undefined,
): Taint[] {
  const others = (taints ?? []).filter((t) => t?.key !== TAINT_KEY);
  if (reason === undefined) return others;
  const ours: Taint = { key: TAINT_KEY, value: reason, effect: TAINT_EFFECT };
  const at = (taints ?? []).findIndex((t) => t?.key === TAINT_KEY);
  if (at < 0) return [...others, ours];
  return [...others.slice(0, at), ours, ...others.slice(at)];
}

export type JsonPatchOp =
  | { op: 'test'; path: string; value: unknown }
  | { op: 'add' | 'replace'; path: string; value: unknown };

/**
 * The JSON patch that moves the Node's taints from `current` (as read) to
 * `next`, and fails (422) if they changed meanwhile: a test of the taints
 * as read, or of the resourceVersion when the Node had none. It never
 * clobbers another writer's taints.
 */
export function taintPatch(
  node: { metadata?: { resourceVersion?: string }; spec?: { taints?: Taint[] | null } | null },
  next: readonly Taint[],
): JsonPatchOp[] {
  const current = node.spec?.taints;
  if (Array.isArray(current))
    return [
      { op: 'test', path: '/spec/taints', value: current },
      { op: 'replace', path: '/spec/taints', value: next },
    ];
  const rv = node.metadata?.resourceVersion ?? '';
  const test: JsonPatchOp = { op: 'test', path: '/metadata/resourceVersion', value: rv };
  if (node.spec === undefined || node.spec === null)
    return [test, { op: 'add', path: '/spec', value: { taints: next } }];
  return [test, { op: 'add', path: '/spec/taints', value: next }];
}
