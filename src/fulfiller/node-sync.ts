// One queued run for one node name: the lifecycle decision (lifecycle.ts),
// then its effect: create the NNC, restore the addresses of a deleted one,
// put the addresses finalizer on an NNC without it, delete it with its Node,
// free what a deleted Node kept once its quarantine is over (quarantine.ts),
// let go of an NNC deleted under a live Node, or a status round
// (status-round.ts). Shared by every backend. Its effects go to the API, the
// backend and the ledger; what it asks of the fulfiller's parts (the view,
// the quarantine, the CSS, the term) it returns with its outcome, for the
// caller to apply (reconciler.ts), as controller-runtime's Reconcile returns
// its Result.
import { isNotFound } from '../kube/errors.ts';
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { addressesOf } from './ledger.ts';
import { lifecycleAction } from './lifecycle.ts';
import {
  finalizersWith,
  hasAddressesFinalizer,
  isTerminating,
  restoreRecord,
} from './quarantine.ts';
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
import {
  asNncConflict,
  ConflictLoopError,
  planFor,
  scalerFor,
  subnetsChanged,
  warn,
} from './sync-context.ts';
import type { SyncAsks, SyncContext, SyncOutcome, SyncResult } from './sync-context.ts';

export { ConflictLoopError } from './sync-context.ts';
export type {
  SyncAsks,
  SyncContext,
  SyncCounters,
  SyncOutcome,
  SyncResult,
} from './sync-context.ts';

export function actionFor(ctx: SyncContext, name: string): LifecycleAction {
  const node = ctx.node(name);
  const nnc = ctx.ledger.nnc(name);
  const quarantine = ctx.quarantineState(name);
  return lifecycleAction({
    nodeExists: node !== undefined,
    selected: node !== undefined && ctx.selected(node),
    nncExists: nnc !== undefined,
    terminating: isTerminating(nnc),
    finalized: hasAddressesFinalizer(nnc),
    // A successor's restore annotation keeps it restoring (and out of status
    // rounds, which could release what it names) until it is cleared.
    retained: ctx.ledger.retained(name) !== undefined || restoreRecord(nnc) !== undefined,
    ...(quarantine ? { quarantine } : {}),
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
  if (plan.invalid) return ctx.record(name).invalid !== plan.invalid;
  if (needsBackend(ctx, nnc, plan)) return true;
  return !jsonEqual(statusWithoutBackend(ctx, nnc, plan), nnc.status);
}

/** Queue priority: the largest deficit first (as the Cilium operator orders its nodes). */
export function priorityFor(ctx: SyncContext, name: string): number {
  const action = actionFor(ctx, name);
  if (action === 'create' || action === 'restore') return priorityOf(1);
  if (action !== 'status' && action !== 'none') return priorityOf(-1);
  const nnc = ctx.ledger.nnc(name);
  return nnc ? priorityOf(neededAddresses(planFor(ctx, nnc))) : 0;
}

/**
 * One run for one node: its outcome and what it asks, also when it failed
 * (`error`; what it asked before the failure still holds).
 */
export async function syncNode(ctx: SyncContext, name: string): Promise<SyncResult> {
  const asks: SyncAsks = {};
  try {
    const outcome = await act(ctx, name, asks);
    return { ...asks, outcome };
  } catch (error) {
    return { ...asks, outcome: 'failed', error };
  }
}

function act(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> | SyncOutcome {
  switch (actionFor(ctx, name)) {
    case 'none':
      return 'noop';
    case 'create':
      return createNnc(ctx, name, asks);
    case 'restore':
      return restoreNnc(ctx, name, asks);
    case 'adopt':
      return adoptNnc(ctx, name, asks);
    case 'delete':
      return deleteNnc(ctx, name, asks);
    case 'release':
      return releaseNnc(ctx, name, asks);
    case 'replace':
      return replaceNnc(ctx, name, asks);
    case 'quarantine':
      return quarantine(ctx, name, ctx.ledger.retained(name) ?? [], asks);
    case 'forget':
      return forgetNode(ctx, name, asks);
    case 'status':
      return serveStatus(ctx, name, asks);
  }
}

async function createNnc(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  const node = ctx.node(name)!;
  const recreate = ctx.ledger.retained(name) !== undefined;
  ctx.guard();
  // A 409 (it exists): its watch event is on the way, and the queue runs
  // the node again after its backoff should none come (as for
  // patchFinalizers).
  const owner = { name, ...(node.uid ? { uid: node.uid } : {}) };
  const created = await ctx.lifecycleApi
    .create(owner, ctx.ledger.retained(name))
    .catch((err: unknown) => {
      throw asNncConflict(name, err);
    });
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
    await restoreNnc(ctx, name, asks);
  } else {
    ctx.log.info('node network config created', { node: name });
    await serveStatus(ctx, name, asks);
  }
  return 'created';
}

/** Writes the addresses the deleted NNC held into its successor, as they were. */
async function restoreNnc(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  const containers = ctx.ledger.retained(name) ?? restoreRecord(ctx.ledger.nnc(name)) ?? [];
  for (let attempt = 0; attempt < ctx.config.conflictRetries; attempt++) {
    const nnc = ctx.ledger.nnc(name);
    if (!nnc) return 'noop';
    const taken = ctx.ledger.heldElsewhere(name, containers);
    if (taken.length > 0) {
      dropStale(ctx, name, containers, taken, asks);
      await clearRestore(ctx, name);
      return serveStatus(ctx, name, asks);
    }
    if (statusHolds(nnc.status, containers)) {
      await clearRestore(ctx, name);
      ctx.ledger.unretain(name);
      asks.quarantine = 'end';
      return 'noop';
    }
    const plan = planFor(ctx, nnc);
    const status = restoredStatus(nnc.status, containers, scalerFor(ctx, name), plan.requested);
    const written = await writeStatus(ctx, nnc, status, []);
    if (written !== 'conflict') {
      await clearRestore(ctx, name);
      ctx.ledger.unretain(name);
      // The Node re-registered and has its addresses back: no quarantine any more.
      asks.quarantine = 'end';
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

/** The successor holds its addresses: its restore annotation goes (no later leader restores them again). */
async function clearRestore(ctx: SyncContext, name: string): Promise<void> {
  if (restoreRecord(ctx.ledger.nnc(name)) === undefined) return;
  ctx.guard();
  ctx.ledger.observe(await ctx.lifecycleApi.clearRestore(name));
}

/**
 * Quarantines the addresses a deleted Node's NNC held when that NNC left
 * without the addresses finalizer (made before it, or the finalizer removed
 * by hand): they were kept in the ledger when it went, and stay kept for the
 * grace period. Only this leader's memory holds this record, unlike the
 * terminating NNC that is the record otherwise (docs/design/fulfiller.md#quarantine).
 */
function quarantine(
  ctx: SyncContext,
  name: string,
  containers: NetworkContainer[],
  asks: SyncAsks,
): SyncOutcome {
  const taken = ctx.ledger.heldElsewhere(name, containers);
  if (taken.length > 0) {
    dropStale(ctx, name, containers, taken, asks);
    return 'forgotten';
  }
  const until = ctx.now() + ctx.config.quarantineMs;
  asks.quarantine = { until, containers: structuredClone(containers) };
  ctx.log.info('addresses of a deleted node quarantined', {
    node: name,
    addresses: addressesOf(containers).size,
    until: new Date(until).toISOString(),
    record: 'memory',
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
function dropStale(
  ctx: SyncContext,
  name: string,
  containers: readonly NetworkContainer[],
  taken: string[],
  asks: SyncAsks,
): void {
  ctx.ledger.unretain(name);
  ctx.log.warn('kept addresses dropped: another NodeNetworkConfig holds them', {
    node: name,
    addresses: addressesOf(containers).size,
    heldElsewhere: taken.slice(0, 5),
  });
  subnetsChanged(asks, true);
  asks.quarantine = 'end';
}

/**
 * The Node is gone: the NNC is deleted. With a quarantine, the addresses
 * finalizer goes on first (an NNC made before it) so that the NNC stays,
 * terminating, as the quarantine's record; its addresses are freed by
 * `releaseNnc` once the quarantine is over. Without one (in-memory tests),
 * they are freed first.
 */
async function deleteNnc(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  let nnc = ctx.ledger.nnc(name)!;
  const containers = dynamicContainers(nnc);
  if (ctx.quarantines && addressesOf(containers).size > 0) {
    if (!hasAddressesFinalizer(nnc)) {
      const patched = await patchFinalizers(ctx, nnc, true, asks);
      if (!patched) return 'noop'; // gone meanwhile: its deletion is on the way
      nnc = patched;
    }
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

/**
 * A live NNC without the addresses finalizer gets it
 * (docs/design/fulfiller.md#quarantine), then its status round: the version
 * the patch answered is already read, so its watch event queues nothing.
 */
async function adoptNnc(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  if (!(await patchFinalizers(ctx, ctx.ledger.nnc(name)!, true, asks))) return 'noop';
  ctx.log.info('addresses finalizer added', { node: name });
  const outcome = await serveStatus(ctx, name, asks);
  return outcome === 'noop' ? 'adopted' : outcome;
}

/**
 * The deleted Node's quarantine is over (its pods are gone, or the grace):
 * its addresses are freed in the backend, then the finalizer comes off and
 * the NNC goes; the ledger frees them when its deletion is seen.
 */
async function releaseNnc(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  const nnc = ctx.ledger.nnc(name)!;
  const containers = dynamicContainers(nnc);
  ctx.guard();
  await ctx.backend.releaseAll(nodeRef(name, undefined), containers[0]);
  if (!(await patchFinalizers(ctx, nnc, false, asks))) return 'noop';
  asks.quarantine = 'end';
  ctx.log.info('addresses of a deleted node freed', {
    node: name,
    addresses: addressesOf(containers).size,
  });
  return 'released';
}

/**
 * The NNC is being deleted while its Node lives: its addresses are kept in
 * the ledger, the finalizer comes off, and once it is gone its successor is
 * created with them (the 'create' and 'restore' actions).
 */
async function replaceNnc(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  // The garbage collector deletes the NNC after its Node: its deletion may
  // be seen before the Node's. Only a Node that exists now keeps its NNC's
  // addresses by this path; a gone one's stay the quarantine's.
  if (ctx.confirmNode && !(await ctx.confirmNode(name))) {
    ctx.log.info('node network config terminating: its Node is gone, its deletion on the way', {
      node: name,
    });
    return 'noop';
  }
  const nnc = ctx.ledger.nnc(name)!;
  const containers = dynamicContainers(nnc);
  const retainedNow = ctx.ledger.retain(name, containers);
  let patched: NodeNetworkConfig | undefined;
  try {
    patched = await patchFinalizers(ctx, nnc, false, asks);
  } catch (err) {
    if (retainedNow) ctx.ledger.unretain(name);
    throw err;
  }
  if (!patched) {
    if (retainedNow) ctx.ledger.unretain(name);
    return 'noop';
  }
  asks.quarantine = 'end';
  ctx.log.warn('node network config deleted under a live node: recreated with its addresses', {
    node: name,
    addresses: addressesOf(containers).size,
  });
  return 'replaced';
}

/**
 * Puts the addresses finalizer on or off with the version read as the
 * precondition; undefined when the NNC is gone (404: its deletion is on the
 * way). A 409 is thrown like any failure, so the queue runs the node again
 * after its backoff (controller-runtime's requeue on a conflict): a newer
 * version is read by then, or the write is tried again (NncConflictError);
 * waiting for a watch event instead left the node alone until the resync
 * when none came.
 */
async function patchFinalizers(
  ctx: SyncContext,
  nnc: NodeNetworkConfig,
  ours: boolean,
  asks: SyncAsks,
): Promise<NodeNetworkConfig | undefined> {
  ctx.guard();
  try {
    const patched = await ctx.lifecycleApi.setFinalizers(nnc, finalizersWith(nnc, ours));
    // Its last finalizer removed, a terminating NNC is gone: the answer is
    // its deletion (a watch that is down would never say so).
    if (isTerminating(patched) && (patched.metadata.finalizers ?? []).length === 0)
      asks.removed = patched;
    else ctx.ledger.observe(patched);
    return patched;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw asNncConflict(nnc.metadata.name, err);
  }
}

async function forgetNode(ctx: SyncContext, name: string, asks: SyncAsks): Promise<SyncOutcome> {
  const containers = ctx.ledger.retained(name);
  ctx.guard();
  await ctx.backend.releaseAll(nodeRef(name, undefined), containers?.[0]);
  asks.quarantine = 'end';
  ctx.ledger.forgetNode(name);
  ctx.log.info('addresses of a deleted node freed', {
    node: name,
    addresses: addressesOf(containers ?? []).size,
  });
  subnetsChanged(asks, true);
  return 'forgotten';
}
