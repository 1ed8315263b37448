// What one node action works with: the fulfiller's state and ports, shared
// by the lifecycle actions (node-sync.ts) and the status round
// (status-round.ts), plus small helpers both use.
import type { EventRecorder, InvolvedObject } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../nnc/types.ts';
import type { IpBackend } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import type { AddressLedger } from './ledger.ts';
import type { FulfillerMetrics } from './metrics.ts';
import type { NodeInfo } from './nodes.ts';
import { maxIpCountFor } from './nodes.ts';
import { planNode } from './plan.ts';
import type { NodePlan } from './plan.ts';
import type { QuarantineBook } from './quarantine.ts';
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
  /** Last invalid-spec message per node, so its Warning is raised once. */
  invalidReported: Map<string, string>;
  /**
   * Last "cannot be set up" verdict per node that waits for a change (a NIC
   * outside the pod subnet): its Warning is raised once, not at every look.
   */
  setupReported?: Map<string, string>;
  node(name: string): NodeInfo | undefined;
  selected(node: NodeInfo): boolean;
  /** Deleted Nodes' kept addresses (quarantine.ts); absent: freed at once (in-memory tests). */
  quarantine?: QuarantineBook;
  /**
   * Where the node's quarantine stands (a terminating NNC of a gone Node is
   * recorded on first sight); undefined without a quarantine.
   */
  quarantineState(name: string): 'none' | 'held' | 'over' | undefined;
  /** The NNC is gone (a write's answer says so: the last finalizer of a terminating one removed). */
  removed(nnc: NodeNetworkConfig): void;
  /** Whether the Node exists now, read afresh (undefined: trust the watch). */
  confirmNode?(name: string): Promise<boolean>;
  /** Looks at the node again when its quarantine ends, and for its pods meanwhile. */
  armQuarantine(name: string, until: number): void;
  /** Why no new address may go to this node now (term-fence.ts), or undefined. */
  allocationWait(name: string): string | undefined;
  /** The node waits (for `allocationWait`): it is queued again when that may have changed. */
  waitFor(name: string, reason: string): void;
  /** Throws NotLeaderError unless this replica may write now. */
  guard(): void;
  /** Writes whose outcome is unknown, per node (see status-round.ts). */
  doubts: Map<string, Doubt[]>;
  now(): number;
  /** Addresses were taken or (`freed`) came free: publish the CSS; on frees wake nodes left short. */
  subnetsChanged(freed: boolean): void;
}

/** Raised when a status write kept conflicting; the queue backs off. */
export class ConflictLoopError extends Error {
  override readonly name = 'ConflictLoopError';
}

/** A status write that failed without saying whether it landed. */
export interface Doubt {
  /** The resourceVersion it was based on. */
  base: string;
  /** The addresses it added (claimed in the ledger). */
  ips: string[];
  /** The server's answer (a 5xx), if any: it proves nothing about the outcome (docs/design/fulfiller.md#high-availability). */
  code?: number;
  /** When it failed (ctx.now()). */
  at: number;
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
