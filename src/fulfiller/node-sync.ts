// One queued run for one node name: the lifecycle decision (lifecycle.ts),
// then its effect: create the NNC, restore the addresses of a deleted one,
// delete it with its Node, free what a deleted Node kept, or a status round
// (status-round.ts). Shared by every backend.
import { isConflict } from '../kube/errors.ts';
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { addressesOf } from './ledger.ts';
import { lifecycleAction } from './lifecycle.ts';
import type { LifecycleAction } from './lifecycle.ts';
import { nodeRef } from './nodes.ts';
import { neededAddresses, priorityOf } from './plan.ts';
import { restoredStatus, statusHolds, jsonEqual } from './status.ts';
import {
  needsBackend,
  reread,
  serveStatus,
  statusWithoutBackend,
  writeStatus,
} from './status-round.ts';
import { ConflictLoopError, planFor, scalerFor, warn } from './sync-context.ts';
import type { SyncContext, SyncOutcome } from './sync-context.ts';

export { ConflictLoopError } from './sync-context.ts';
export type { SyncContext, SyncCounters, SyncOutcome } from './sync-context.ts';

export function actionFor(ctx: SyncContext, name: string): LifecycleAction {
  const node = ctx.node(name);
  return lifecycleAction({
    nodeExists: node !== undefined,
    selected: node !== undefined && ctx.selected(node),
    nncExists: ctx.ledger.nnc(name) !== undefined,
    retained: ctx.ledger.retained(name) !== undefined,
    quarantine: !ctx.quarantine
      ? 'over'
      : !ctx.quarantine.get(name)
        ? 'none'
        : ctx.quarantine.holds(name, ctx.now())
          ? 'held'
          : 'over',
  });
}

/**
 * True when the node has something to do: an NNC to create, restore or
 * delete, addresses to add or release, or a status that differs from what
 * it should be. Pure and cheap: the resync calls it for every node and
 * queues only those, so a resync with nothing to do sends nothing.
 */
export function needsWork(ctx: SyncContext, name: string): boolean {
  const action = actionFor(ctx, name);
  if (action === 'none') return false;
  if (action !== 'status') return true;
  if (ctx.ledger.inDoubt(name)) return true;
  const nnc = ctx.ledger.nnc(name)!;
  const plan = planFor(ctx, nnc);
  if (plan.invalid) return ctx.invalidReported.get(name) !== plan.invalid;
  if (needsBackend(ctx, nnc, plan)) return true;
  return !jsonEqual(statusWithoutBackend(ctx, nnc, plan), nnc.status);
}

/** Queue priority: the largest deficit first (as the Cilium operator orders its nodes). */
export function priorityFor(ctx: SyncContext, name: string): number {
  const action = actionFor(ctx, name);
  if (action === 'create' || action === 'restore') return priorityOf(1);
  if (action === 'delete' || action === 'forget' || action === 'quarantine') return priorityOf(-1);
  const nnc = ctx.ledger.nnc(name);
  return nnc ? priorityOf(neededAddresses(planFor(ctx, nnc))) : 0;
}

export async function syncNode(ctx: SyncContext, name: string): Promise<SyncOutcome> {
  switch (actionFor(ctx, name)) {
    case 'none':
      return 'noop';
    case 'create':
      return createNnc(ctx, name);
    case 'restore':
      return restoreNnc(ctx, name);
    case 'delete':
      return deleteNnc(ctx, name);
    case 'quarantine':
      return quarantine(ctx, name, ctx.ledger.retained(name) ?? []);
    case 'forget':
      return forgetNode(ctx, name);
    case 'status':
      return serveStatus(ctx, name);
  }
}

async function createNnc(ctx: SyncContext, name: string): Promise<SyncOutcome> {
  const node = ctx.node(name)!;
  const recreate = ctx.ledger.retained(name) !== undefined;
  ctx.guard();
  let created: NodeNetworkConfig;
  try {
    created = await ctx.lifecycleApi.create({ name, ...(node.uid ? { uid: node.uid } : {}) });
  } catch (err) {
    if (isConflict(err)) return 'noop'; // it exists: its watch event is on the way
    throw err;
  }
  ctx.ledger.observe(created);
  ctx.metrics?.lifecycle(recreate ? 'recreated' : 'created');
  if (recreate) {
    ctx.log.warn('node network config recreated', { node: name });
    warn(
      ctx,
      created,
      'NodeNetworkConfigRecreated',
      'recreated with the addresses of the deleted NNC',
    );
    await restoreNnc(ctx, name);
  } else {
    ctx.log.info('node network config created', { node: name });
    await serveStatus(ctx, name);
  }
  return 'created';
}

/** Writes the addresses the deleted NNC held into its successor, as they were. */
async function restoreNnc(ctx: SyncContext, name: string): Promise<SyncOutcome> {
  const containers = ctx.ledger.retained(name)!;
  for (let attempt = 0; attempt < ctx.config.conflictRetries; attempt++) {
    const nnc = ctx.ledger.nnc(name);
    if (!nnc) return 'noop';
    const taken = ctx.ledger.heldElsewhere(name, containers);
    if (taken.length > 0) {
      await dropStale(ctx, name, containers, taken);
      return serveStatus(ctx, name);
    }
    if (statusHolds(nnc.status, containers)) {
      ctx.ledger.unretain(name);
      if (ctx.quarantine?.drop(name)) await ctx.persistQuarantine();
      return 'noop';
    }
    const plan = planFor(ctx, nnc);
    const status = restoredStatus(nnc.status, containers, scalerFor(ctx, name), plan.requested);
    const written = await writeStatus(ctx, nnc, status, []);
    if (written !== 'conflict') {
      ctx.ledger.unretain(name);
      // The Node re-registered and has its addresses back: no quarantine any more.
      if (ctx.quarantine?.drop(name)) await ctx.persistQuarantine();
      ctx.log.info('node network config restored', {
        node: name,
        addresses: addressesOf(containers).size,
      });
      return 'restored';
    }
    await reread(ctx, name);
  }
  throw new ConflictLoopError(`status of ${name} kept conflicting`);
}

/**
 * Records a deleted Node's addresses as quarantined, in the cluster first
 * (a fulfiller that dies next still keeps them), then in the ledger.
 */
async function quarantine(
  ctx: SyncContext,
  name: string,
  containers: NetworkContainer[],
): Promise<SyncOutcome> {
  const book = ctx.quarantine!;
  const taken = ctx.ledger.heldElsewhere(name, containers);
  if (taken.length > 0) {
    await dropStale(ctx, name, containers, taken);
    return 'forgotten';
  }
  const until = ctx.now() + ctx.config.quarantineMs;
  book.put({ node: name, until, containers: structuredClone(containers) });
  // Kept in the ledger before the first await: the NNC's deletion (a watch
  // event, a re-list) may free its addresses while the write is on the way.
  const retainedNow = ctx.ledger.retain(name, containers);
  try {
    await ctx.persistQuarantine();
  } catch (err) {
    book.drop(name);
    if (retainedNow) ctx.ledger.unretain(name);
    throw err;
  }
  ctx.log.info('addresses of a deleted node quarantined', {
    node: name,
    addresses: addressesOf(containers).size,
    until: new Date(until).toISOString(),
  });
  return 'quarantined';
}

/**
 * Addresses kept for a node (a deleted NNC's, a quarantine's) that the
 * status of another live NNC holds (`taken`) were handed out by a leader
 * that never saw them kept (its fresh list held neither the NNC nor the
 * Node, or it looked away while the NNC was deleted and recreated): the
 * memory is stale, and writing or quarantining it would put one address on
 * two nodes. It is dropped, and said so.
 */
async function dropStale(
  ctx: SyncContext,
  name: string,
  containers: readonly NetworkContainer[],
  taken: string[],
): Promise<void> {
  ctx.ledger.unretain(name);
  ctx.log.warn('kept addresses dropped: another NodeNetworkConfig holds them', {
    node: name,
    addresses: addressesOf(containers).size,
    heldElsewhere: taken.slice(0, 5),
  });
  ctx.subnetsChanged(true);
  if (ctx.quarantine?.drop(name)) await ctx.persistQuarantine();
}

async function deleteNnc(ctx: SyncContext, name: string): Promise<SyncOutcome> {
  const nnc = ctx.ledger.nnc(name)!;
  const containers = dynamicContainers(nnc);
  if (ctx.quarantine && addressesOf(containers).size > 0) {
    // Its pods may still run: the addresses stay kept after the NNC is gone.
    await quarantine(ctx, name, containers);
  } else {
    ctx.guard();
    await ctx.backend.releaseAll(nodeRef(name, undefined), containers[0]);
  }
  ctx.guard();
  await ctx.lifecycleApi.delete(name, nnc.metadata.uid);
  ctx.metrics?.lifecycle('deleted');
  ctx.log.info('node network config deleted', { node: name, reason: 'node deleted' });
  return 'deleted';
}

async function forgetNode(ctx: SyncContext, name: string): Promise<SyncOutcome> {
  const containers = ctx.ledger.retained(name);
  ctx.guard();
  await ctx.backend.releaseAll(nodeRef(name, undefined), containers?.[0]);
  if (ctx.quarantine?.drop(name)) await ctx.persistQuarantine();
  ctx.ledger.forgetNode(name);
  ctx.log.info('addresses of a deleted node freed', {
    node: name,
    addresses: addressesOf(containers ?? []).size,
  });
  ctx.subnetsChanged(true);
  return 'forgotten';
}
