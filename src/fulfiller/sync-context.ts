// What one node's run works with (its context) and what it gives back (its
// result), shared by the lifecycle actions (node-sync.ts) and the status
// round (status-round.ts), plus small helpers both use.
import { isConflict } from '../kube/errors.ts';
import type { EventRecorder, InvolvedObject } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { NetworkContainer, NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../nnc/types.ts';
import type { IpBackend } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import type { AddressLedger } from './ledger.ts';
import type { FulfillerMetrics } from './metrics.ts';
import type { NodeInfo } from './nodes.ts';
import { maxIpCountFor } from './nodes.ts';
import { planNode } from './plan.ts';
import type { NodePlan } from './plan.ts';
import type { NodeRecord } from './node-record.ts';
import type { NncLifecycleApi, NncStatusApi } from './ports.ts';

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
  | 'forgotten';

export interface SyncCounters {
  writes: number;
  conflicts: number;
  failures: number;
  allocated: number;
  released: number;
}

/**
 * What one node's run asks of the fulfiller's parts besides its outcome
 * (controller-runtime's `Result`): nothing in it is done while the run goes
 * on; the caller applies it when the run ends, failed or not, in this order
 * (reconciler.ts).
 */
export interface SyncAsks {
  /**
   * The NNC is gone: the answer to the removal of its last finalizer says so
   * (a watch that is down would never say so). The view takes it in first:
   * whether its addresses stay reads the quarantine record before it goes.
   */
  removed?: NodeNetworkConfig;
  /**
   * A deleted Node's addresses are kept in the leader's memory until `until`
   * (looked at again then, and for its pods meanwhile), or (`end`) its
   * quarantine record goes: its addresses are restored, freed or stale.
   */
  quarantine?: { until: number; containers: NetworkContainer[] } | 'end';
  /** Addresses were taken, or came free: publish the CSS (on `freed`, wake nodes left short). */
  subnets?: 'taken' | 'freed';
  /**
   * No new address may go to the node now (term-fence.ts), for this reason:
   * it waits, and is queued again when that may have changed.
   */
  waitsFor?: string;
}

/** What one node's run did, and what it asks. */
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

/**
 * What one node's run reads: the fulfiller's settings, ports and memory.
 * Its effects go to the API, the backend, the ledger and its node's record
 * (which it keeps up to date itself); what it asks of the fulfiller's other
 * parts it returns (SyncAsks). The functions here are reads, except `guard`.
 */
export interface SyncContext {
  config: FulfillerConfig;
  backend: IpBackend;
  ledger: AddressLedger;
  nncApi: NncStatusApi;
  lifecycleApi: NncLifecycleApi;
  log: Logger;
  events: EventRecorder;
  metrics: FulfillerMetrics | undefined;
  newId: () => string;
  counters: SyncCounters;
  /** What the fulfiller remembers about the node (node-record.ts). */
  record(name: string): NodeRecord;
  node(name: string): NodeInfo | undefined;
  selected(node: NodeInfo): boolean;
  /** Deleted Nodes' addresses are quarantined; false: freed at once (in-memory tests). */
  quarantines: boolean;
  /**
   * Where the node's quarantine stands (a terminating NNC of a gone Node is
   * recorded on first sight); undefined without a quarantine.
   */
  quarantineState(name: string): 'none' | 'held' | 'over' | undefined;
  /**
   * Whether the Node exists now, read afresh (undefined: trust the watch).
   * A read whose answer decides the run's next step, so it is asked here.
   */
  confirmNode?(name: string): Promise<boolean>;
  /** Why no new address may go to this node now (term-fence.ts), or undefined. */
  allocationWait(name: string): string | undefined;
  /**
   * Throws NotLeaderError unless this replica may write now. Asked right
   * before each write goes out, with no await between: a result returned at
   * the end of the run would come after the write.
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
 * 409 from elsewhere (ARM's AnotherOperationInProgress) stays a failure.
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

export function scalerFor(ctx: SyncContext, name: string): Required<ScalerSpec> {
  const max = maxIpCountFor(ctx.config.scaler.maxIPCount, ctx.node(name));
  return { ...ctx.config.scaler, maxIPCount: max };
}

export function planFor(ctx: SyncContext, nnc: NodeNetworkConfig): NodePlan {
  const validId = ctx.backend.validId?.bind(ctx.backend);
  const validAddress = ctx.backend.validAddress?.bind(ctx.backend);
  return planNode(nnc, scalerFor(ctx, nnc.metadata.name).maxIPCount, validId, validAddress);
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
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  reason: string,
  message: string,
): void {
  void (ctx.events as EventRecorder).recordEvent(involved(ctx, nnc), {
    type: 'Warning',
    reason,
    message,
  });
}
