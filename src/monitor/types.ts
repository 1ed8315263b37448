// What the pool monitor reports: one outcome per reconcile, events for bad
// input and failures, and a snapshot for /debug/pool and metrics.
import type { IdleAccountView } from '../scaling/policies/budget/idle-budget.ts';
import type { Scaler, ScalerField } from '../scaling/scaler.ts';
import type { DesiredSpec } from './ports.ts';

/** Why a reconcile did (or did not) write; decided by decide.ts. */
export type DecisionReason =
  /** The request is the target and the spec is what the NNC holds. */
  | 'at-target'
  /** A lower target is held back by --release-delay, nothing else to write. */
  | 'deferred'
  /** The request would change, but a write went out less than the write window ago. */
  | 'write-window'
  | 'scale-up'
  | 'scale-down'
  /** Same request, but the spec differs: stale ids, an out-of-band edit, unwritten marks. */
  | 'spec differs'
  /** Same request, but the node holds more active IPs than it: the markable surplus goes back. */
  | 'surplus';

/** What a reconcile asks the monitor to come back for, and when (scheduler ms). */
export type WakeReason = 'retry' | 'damping' | 'write-window';
export interface WakeUp {
  reason: WakeReason;
  at: number;
}

export type OutcomeKind =
  /** The request moved and the spec was written. */
  | 'scaled'
  /** Same request, but the spec was rewritten (stale ids, out-of-band edit, unwritten marks). */
  | 'corrected'
  /** Nothing to do, nothing written. */
  | 'at-target'
  /** A lower target is held back by --release-delay; nothing written. */
  | 'deferred'
  /** A request change waits for the end of the write window (then written with the latest state). */
  | 'throttled'
  /** Dry-run: a write would have happened; nothing marked or written. */
  | 'dry-run'
  /** Marking, reading the store or writing failed; retried with backoff. */
  | 'failed';

export type FailureStage = 'mark' | 'read' | 'write';

/** The figures a decision starts from, and every outcome reports. */
export interface TargetFigures {
  demand: number;
  exhausted: boolean;
  /** The scaler the target was computed with (after the exhaustion override). */
  scaler: Scaler;
  /** Target the scaling function gives. */
  target: number;
  /** Target applied after damping (equals `target` unless deferred). */
  applied: number;
  /** Request before the reconcile. */
  from: number;
  /** applied − from. */
  delta: number;
}

export interface ReconcileOutcome extends TargetFigures {
  kind: OutcomeKind;
  /** Why, as decided (absent when the store could not be read). */
  reason?: DecisionReason;
  /** Scheduler time (ms) the reconcile started. */
  at: number;
  /** Request after it (moves only when a write succeeded). */
  to: number;
  /** IPs marked PendingRelease by this reconcile. */
  marked: number;
  wrote: boolean;
  /** The spec written (or that dry-run would have written). */
  spec?: DesiredSpec;
  error?: string;
  stage?: FailureStage;
  statusCode?: number;
  /** When failed: delay before the retry. */
  retryInMs?: number;
  /** When the monitor comes back by itself: a retry, a damping recheck, the write window's end. */
  wake?: WakeUp;
  /** `metadata.generation` after the write, when the writer reported it. */
  generation?: number;
}

export type MonitorEvent =
  | { type: 'ready'; request: number }
  | { type: 'scaler-invalid'; field: ScalerField; value: unknown; message: string }
  | { type: 'nnc-invalid'; reason: string }
  | { type: 'nnc-recreated'; uid: string }
  | { type: 'input-invalid'; input: 'demand' | 'exhausted'; value: unknown }
  | { type: 'input-failed'; input: 'demand' | 'exhausted' | 'nnc'; error: string }
  | { type: 'mark-failed'; count: number; error: string }
  | { type: 'write-failed'; error: string; statusCode?: number; retryInMs: number };

export interface LastReconcile {
  at: number;
  outcome: OutcomeKind;
  delta: number;
  error?: string;
}

export interface PoolSnapshot {
  /** True once all three inputs have emitted and a valid NNC arrived. */
  ready: boolean;
  dryRun: boolean;
  demand: number | undefined;
  exhausted: boolean | undefined;
  /** Scaler from the NNC, before the exhaustion override. */
  scaler: Scaler | undefined;
  /** Latest computed target (undefined until ready). */
  target: number | undefined;
  /** The requestedIPCount last written (or seeded from the NNC). */
  request: number | undefined;
  /** Time a retry is due while backing off after failures. */
  retryAt: number | undefined;
  consecutiveFailures: number;
  reconciles: number;
  writes: number;
  lastReconcile: LastReconcile | undefined;
}

/** What the pool policy makes of the current state: for /debug/pool. */
export interface DampingView {
  policy: string;
  /** The CNS v2 target. */
  target: number;
  /** What the policy applies now. */
  applied: number;
  request: number;
  /** IPs held back above the target (applied - target when lower than the request). */
  heldBack: number;
  deferred: boolean;
  /** When the policy looks again by itself (scheduler ms). */
  recheckAt?: number;
  why?: { summary: string; [key: string]: unknown };
  /** The policy's idle account against CNS v2 (policies with an idle budget). */
  account?: IdleAccountView;
}
