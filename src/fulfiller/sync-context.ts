// What one node's run works with (its context) and what it gives back (its
// result), shared by the lifecycle actions (node-sync.ts), the status round
// (status-round.ts) and the status write (status-write.ts), plus small
// helpers they use. A run changes records only through the book.
import { isConflict } from '../kube/errors.ts';
import type { EventRecorder, InvolvedObject } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../nnc/types.ts';
import type { IpBackend } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import type { FulfillerMetrics } from './metrics.ts';
import type { NodeBook } from './node-book.ts';
import type { RecordView } from './node-record.ts';
import type { NodeInfo } from './nodes.ts';
import { maxIpCountFor } from './nodes.ts';
import { planNode } from './plan.ts';
import type { NodePlan } from './plan.ts';
import type { ClusterListApi, NncLifecycleApi, NncStatusApi } from './ports.ts';

export type SyncOutcome =
  | 'noop'
  | 'written'
  | 'invalid'
  | 'created'
  | 'restored'
  | 'adopted'
  | 'deleted'
  | 'replaced'
  | 'quarantined'
  | 'released'
  | 'forgotten'
  | 'waiting';

export interface SyncCounters {
  writes: number;
  conflicts: number;
  failures: number;
  allocated: number;
  released: number;
}

/**
 * What one run asks of the term besides its outcome (controller-runtime's
 * `Result`), applied when the run ends, failed or not (reconciler.ts).
 */
export interface SyncAsks {
  /** Addresses were taken, or came free: publish the CSS (on `freed`, wake nodes left short). */
  subnets?: 'taken' | 'freed';
  /** Run the node again after this long (a quarantine's end, its next look for pods). */
  requeueAfterMs?: number;
}

/** What one run did, and what it asks. */
export interface SyncResult extends SyncAsks {
  /** `failed`: `error` says why, and the queue retries. */
  outcome: SyncOutcome | 'failed';
  error?: unknown;
}

/** Records that addresses were taken, or came free (`freed` wins over `taken`). */
export function subnetsChanged(asks: SyncAsks, freed: boolean): void {
  if (freed) asks.subnets = 'freed';
  else asks.subnets ??= 'taken';
}

/** Asks for the node to run again within `ms` (the earliest ask wins). */
export function requeueAfter(asks: SyncAsks, ms: number): void {
  asks.requeueAfterMs = Math.min(asks.requeueAfterMs ?? Infinity, Math.max(0, ms));
}

/**
 * What one run reads: the fulfiller's settings, ports and records. Its
 * effects go to the API, the backend and the book; the functions here are
 * reads, except `guard`.
 */
export interface SyncContext {
  config: FulfillerConfig;
  backend: IpBackend;
  book: NodeBook;
  nncApi: NncStatusApi;
  lifecycleApi: NncLifecycleApi;
  /** Reads the runs need: a Node by name, the pods bound to a node. */
  lists: ClusterListApi;
  log: Logger;
  events: EventRecorder;
  metrics: FulfillerMetrics | undefined;
  newId: () => string;
  counters: SyncCounters;
  selected(node: NodeInfo): boolean;
  /** Why no new address may go to the node now (a view that may miss changes, the fence), or undefined. */
  allocationWait(record: RecordView): string | undefined;
  /**
   * Throws NotLeaderError unless this replica may write now. Asked right
   * before each write goes out, with no await between.
   */
  guard(): void;
  now(): number;
}

/** Raised when a status write kept conflicting; the queue backs off. */
export class ConflictLoopError extends Error {
  override readonly name = 'ConflictLoopError';
}

/**
 * A lifecycle write (create, finalizer patch) answered 409: the NNC changed
 * or exists. Not a failure: the queue runs the node again after its backoff,
 * by when its newer version is normally read (node-sync.ts). Only these: a
 * 409 from elsewhere (a backend's, such as ARM's Conflict) stays a failure.
 */
export class NncConflictError extends Error {
  override readonly name = 'NncConflictError';
  constructor(node: string, cause: unknown) {
    super(`${node}: the NodeNetworkConfig changed or exists (409)`, { cause });
  }
}

/** Its 409 thrown as NncConflictError; anything else as it is. */
export function asNncConflict(node: string, err: unknown): unknown {
  return isConflict(err) ? new NncConflictError(node, err) : err;
}

export function scalerFor(ctx: SyncContext, record: RecordView): Required<ScalerSpec> {
  const max = maxIpCountFor(ctx.config.scaler.maxIPCount, record.nodeInfo());
  return { ...ctx.config.scaler, maxIPCount: max };
}

export function planFor(ctx: SyncContext, record: RecordView, nnc: NodeNetworkConfig): NodePlan {
  const validId = ctx.backend.validId?.bind(ctx.backend);
  const validAddress = ctx.backend.validAddress?.bind(ctx.backend);
  const max = scalerFor(ctx, record).maxIPCount;
  return planNode(nnc, max, ctx.backend.families(), validId, validAddress);
}

export function involved(ctx: SyncContext, nnc: NodeNetworkConfig): InvolvedObject {
  return {
    apiVersion: `${GROUP}/${NNC_VERSION}`,
    kind: NNC_KIND,
    name: nnc.metadata.name,
    namespace: nnc.metadata.namespace ?? ctx.config.namespace,
    ...(nnc.metadata.uid ? { uid: nnc.metadata.uid } : {}),
  };
}

export function warn(
  ctx: Pick<SyncContext, 'events' | 'config'>,
  nnc: NodeNetworkConfig,
  reason: string,
  message: string,
): void {
  void ctx.events.recordEvent(involved(ctx as SyncContext, nnc), {
    type: 'Warning',
    reason,
    message,
  });
}
