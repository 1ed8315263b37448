// The monitor's one state: what the watches said (demand, exhaustion, the
// NNC), what the monitor believes it wrote, and its run control (reconciles
// asked for and served, a retry or a held write pending); the inputs that
// change it (reduce.ts folds them in, purely) and the gate on it.
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { fixedDelayPolicy } from '../scaling/policies/fixed-delay.ts';
import { guarded, type AnyPolicy, type Observation } from '../scaling/policies/policy.ts';
import { applyExhaustion, type Scaler } from '../scaling/scaler.ts';
import type { ObservedSpec, WrittenSpec } from './spec.ts';
import type {
  LastReconcile,
  MonitorEvent,
  PoolSnapshot,
  ReconcileOutcome,
  WakeReason,
} from './types.ts';

export interface MonitorConfig {
  /** Scale-down damping by a fixed delay (0: exactly CNS); used when `policy` is absent. */
  releaseDelayMs?: number;
  /** The pool policy (damping); guarded by the monitor (policies/policy.ts). */
  policy?: AnyPolicy;
  /** A request change is written at once unless a write went out less than this ago. */
  writeWindowMs: number;
}

/** The monitor's settings, resolved: the policy is always there, and guarded. */
export interface ResolvedConfig {
  policy: AnyPolicy;
  writeWindowMs: number;
}

export type InputName = 'demand' | 'exhausted' | 'nnc';

export type MonitorInput =
  | { type: 'demand'; at: number; value: unknown }
  | { type: 'exhausted'; at: number; value: unknown }
  | { type: 'nnc'; at: number; nnc: NodeNetworkConfig }
  | { type: 'input-failed'; at: number; input: InputName; error: string }
  | { type: 'tick'; at: number }
  /** The store changed outside the monitor (leaked IPs reclaimed): decide again. */
  | { type: 'store'; at: number }
  | { type: 'wake'; at: number; reason: WakeReason }
  /** A reconcile's outcome fed back, with what it ran on. */
  | { type: 'reconciled'; at: number; outcome: ReconcileOutcome; ran: Ran };

/** What a reconcile ran on: the requests it served and the NNC it wrote to. */
export interface Ran {
  wanted: number;
  uid: string | undefined;
}

/** A log line and/or an event the reducer asks for. */
export interface Notice {
  level: 'info' | 'warn' | 'error';
  /** The log message; no log line when absent. */
  msg?: string;
  fields?: Record<string, unknown>;
  event?: MonitorEvent;
}

/** What the monitor takes from a valid NNC. */
export interface NncView {
  uid: string | undefined;
  /** Normalised `status.scaler`, before the exhaustion override. */
  scaler: Scaler;
  observed: ObservedSpec;
  /** The IP ids the status backs: only these go into `spec.ipsNotInUse`. */
  backed: string[];
  /** Ids in `spec.ipsNotInUse` the status no longer backs. */
  stale: string[];
  /** IPs the status of the dynamic network containers holds. */
  allocated: number;
  /** Since when (ms) the spec has carried stale ids; absent while it carries none. */
  staleSince?: number;
}

export interface MonitorState {
  config: ResolvedConfig;
  demand?: number;
  exhausted?: boolean;
  nnc?: NncView;
  /** The requestedIPCount last written (or read from the NNC of this uid). */
  request?: number;
  /** The latest computed target (scaling function, before damping). */
  target?: number;
  /** What the policy has observed (its own shape; bounded). */
  policyMemory: unknown;
  /** The latest observation fed to the policy. */
  observation?: Observation;
  /** The spec last written to the NNC of this uid. */
  written?: WrittenSpec;
  /** IPs marked PendingRelease whose write has not succeeded yet. */
  unwrittenMarks: number;
  /** When the last successful write went out. */
  lastWriteAt?: number;
  /** A retry is due then; until then inputs only update the state. */
  retryAt?: number;
  /** A held write goes out then; until then inputs only update the state. */
  heldUntil?: number;
  failures: number;
  /** Inputs so far that call for a reconcile, and how many of them one has covered. */
  wanted: number;
  served: number;
  reconciles: number;
  writes: number;
  last?: LastReconcile;
  /** What the last input asked to log and report. */
  notices: Notice[];
}

export function resolveConfig(config: MonitorConfig): ResolvedConfig {
  return {
    policy: guarded(config.policy ?? fixedDelayPolicy(config.releaseDelayMs ?? 0)),
    writeWindowMs: config.writeWindowMs,
  };
}

export function initialState(config: MonitorConfig): MonitorState {
  const resolved = resolveConfig(config);
  return {
    config: resolved,
    policyMemory: resolved.policy.initial(),
    unwrittenMarks: 0,
    failures: 0,
    wanted: 0,
    served: 0,
    reconciles: 0,
    writes: 0,
    notices: [],
  };
}

/** The gate: all watches listed and a valid NNC seen. */
export function isReady(s: MonitorState): boolean {
  return s.demand !== undefined && s.exhausted !== undefined && s.nnc !== undefined;
}

/** Ready, owed a reconcile, and neither backing off nor holding a write. */
export function isDue(s: MonitorState): boolean {
  return isReady(s) && s.wanted > s.served && s.retryAt === undefined && s.heldUntil === undefined;
}

/** The scaler the target is computed with: the NNC's, overridden while exhausted. */
export function effectiveScaler(s: MonitorState): Scaler {
  const scaler = s.nnc?.scaler ?? { batch: 1, buffer: 0, max: 250 };
  return applyExhaustion(scaler, s.exhausted === true);
}

export function snapshotOf(s: MonitorState, dryRun: boolean): PoolSnapshot {
  return {
    ready: isReady(s),
    dryRun,
    demand: s.demand,
    exhausted: s.exhausted,
    scaler: s.nnc === undefined ? undefined : { ...s.nnc.scaler },
    target: s.target,
    request: s.request,
    retryAt: s.retryAt,
    consecutiveFailures: s.failures,
    reconciles: s.reconciles,
    writes: s.writes,
    lastReconcile: s.last === undefined ? undefined : { ...s.last },
  };
}
