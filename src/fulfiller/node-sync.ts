// One queued run for one node name: the lifecycle decision from its records
// (lifecycle.ts), then its effect: create the NNC, merge kept addresses into
// its status, put the finalizer and owner on an NNC without them, delete a
// gone Node's NNC, free what it kept once its quarantine is over, let a
// terminating NNC go to a live Node of its name, or a status round
// (status-round.ts). Its effects go to the API, the backend and the book;
// what it asks of the term (the CSS, a run later) it returns with its
// outcome, as controller-runtime's Reconcile returns its Result.
import { apiErrorInfo, isNotFound } from '../kube/errors.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { addressesOf } from './address-index.ts';
import type { LifecycleDecision, NameState } from './lifecycle.ts';
import { lifecycleAction } from './lifecycle.ts';
import { nextSeq, ownerUid } from './node-book.ts';
import type { RecordView } from './node-record.ts';
import { carried, carryOnNode, clearNodeRestore } from './node-restore.ts';
import { nodeRef } from './nodes.ts';
import { neededAddresses, priorityOf } from './plan.ts';
import {
  finalizersWith,
  hasAddressesFinalizer,
  isTerminating,
  quarantineOf,
  quarantineState,
  restoreRecord,
} from './quarantine.ts';
import { mergeKept, STATUS_SUBNET_FULL } from './status.ts';
import { admit } from './status-gate.ts';
import { containersWithoutBackend, needsBackend, reread, serveStatus } from './status-round.ts';
import { writeThroughGate } from './status-write.ts';
import { jsonEqual } from './status.ts';
import {
  asNncConflict,
  ConflictLoopError,
  planFor,
  requeueAfter,
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

/** The name's records as the lifecycle decides on them. */
export function nameState(ctx: SyncContext, name: string): NameState {
  const { book } = ctx;
  const live = book.liveRecord(name);
  const now = ctx.now();
  const state: NameState = { gone: [] };
  for (const r of book.recordsOf(name)) {
    const nnc = r.nnc();
    if (r === live) {
      const info = r.nodeInfo()!;
      state.live = {
        key: r.key,
        selected: ctx.selected(info),
        kept: carried(r) !== undefined,
        ...(nnc
          ? {
              nnc: {
                terminating: isTerminating(nnc),
                finalized: hasAddressesFinalizer(nnc),
                owned: !info.uid || ownerUid(nnc) === info.uid,
                restoring: restoreRecord(nnc) !== undefined,
              },
            }
          : {}),
      };
      continue;
    }
    state.gone.push({
      key: r.key,
      confirmed: r.nodeGone(),
      ...(nnc
        ? { nnc: { terminating: isTerminating(nnc), finalized: hasAddressesFinalizer(nnc) } }
        : {}),
      ...(r.kept ? { kept: r.kept.why } : {}),
      quarantine: quarantineState(r, now),
    });
  }
  return state;
}

export function decide(ctx: SyncContext, name: string): LifecycleDecision {
  return lifecycleAction(nameState(ctx, name));
}

/**
 * True when the name has something to do: an NNC to create, restore or
 * delete, addresses to add or release, or a status that differs from what
 * it should be. Pure and cheap: the resync asks it of every name and queues
 * only those, so a resync with nothing to do sends nothing.
 */
export function needsWork(ctx: SyncContext, name: string): boolean {
  const d = decide(ctx, name);
  if (d.action === 'none') return false;
  const r = recordOf(ctx, d);
  if (d.action === 'quarantined') {
    return quarantineState(r, ctx.now()) === 'unrecorded' || lookDue(ctx, r);
  }
  if (d.action !== 'status') return true;
  if (r.doubts.length > 0) return true;
  const nnc = r.nnc()!;
  const plan = planFor(ctx, r, nnc);
  if (plan.invalid) return r.verdicts.invalid !== plan.invalid;
  if (needsBackend(ctx, r, plan)) return true;
  const verdict = admit(ctx.book, r, nnc, {
    containers: containersWithoutBackend(ctx, r, plan),
    requested: plan.requested,
    short: nnc.status?.status === STATUS_SUBNET_FULL && plan.allocate > 0,
    scaler: scalerFor(ctx, r),
  });
  return verdict.kind === 'admit' && !jsonEqual(verdict.status, nnc.status);
}

/** Queue priority: the largest deficit first (as the Cilium operator orders its nodes). */
export function priorityFor(ctx: SyncContext, name: string): number {
  const d = decide(ctx, name);
  if (d.action === 'create' || d.action === 'restore') return priorityOf(1);
  if (d.action !== 'status') return d.action === 'none' ? 0 : priorityOf(-1);
  const r = recordOf(ctx, d);
  return priorityOf(neededAddresses(planFor(ctx, r, r.nnc()!)));
}

/**
 * One run for one name: its outcome and what it asks, also when it failed
 * (`error`; what it asked before the failure still holds).
 */
export async function syncNode(ctx: SyncContext, name: string): Promise<SyncResult> {
  const asks: SyncAsks = {};
  try {
    // A Node read afresh, or a quarantine a look just ended, decides again at once.
    for (let step = 0; step < 4; step++) {
      const outcome = await act(ctx, decide(ctx, name), asks);
      if (outcome !== 'again') return { ...asks, outcome };
    }
    return { ...asks, outcome: 'noop' };
  } catch (error) {
    return { ...asks, outcome: 'failed', error };
  }
}

function recordOf(ctx: SyncContext, d: LifecycleDecision): RecordView {
  return ctx.book.record(d.key!)!;
}

function act(
  ctx: SyncContext,
  d: LifecycleDecision,
  asks: SyncAsks,
): Promise<SyncOutcome | 'again'> | SyncOutcome | 'again' {
  if (d.action === 'none') return 'noop';
  const r = recordOf(ctx, d);
  switch (d.action) {
    case 'create':
      return createNnc(ctx, r, asks);
    case 'restore':
      return restore(ctx, r, asks);
    case 'adopt':
      return adoptNnc(ctx, r, asks);
    case 'status':
      return serveStatus(ctx, r, asks);
    case 'delete':
      return deleteNnc(ctx, r, asks);
    case 'release':
      return releaseNnc(ctx, r, asks);
    case 'replace':
      return replaceNnc(ctx, r);
    case 'quarantined':
      return quarantined(ctx, r, asks);
    case 'quarantine':
      return quarantineKept(ctx, r, asks);
    case 'transfer':
      return transfer(ctx, r);
    case 'forget':
      return forget(ctx, r, asks);
    case 'confirm':
      return confirmNode(ctx, r.name);
  }
}

/** Reads the Node of the name afresh: the answer decides (node-book.ts). */
async function confirmNode(ctx: SyncContext, name: string): Promise<'again' | 'noop'> {
  if (!ctx.lists.getNode) return 'noop';
  const sent = nextSeq();
  ctx.book.answered('node', name, await ctx.lists.getNode(name), sent);
  return 'again';
}

async function createNnc(ctx: SyncContext, r: RecordView, asks: SyncAsks): Promise<SyncOutcome> {
  const node = r.nodeInfo()!;
  const kept = carried(r);
  ctx.guard();
  const sent = nextSeq();
  // A 409 (it exists): the queue runs the node again after its backoff.
  const created = await ctx.lifecycleApi
    .create({ name: r.name, ...(node.uid ? { uid: node.uid } : {}) }, kept)
    .catch((err: unknown) => {
      throw asNncConflict(r.name, err);
    });
  ctx.book.answered('nnc', r.name, created, sent);
  ctx.metrics?.lifecycle(kept ? 'recreated' : 'created');
  if (kept) {
    ctx.log.warn('node network config recreated', { node: r.name });
    warn(ctx, created, 'NodeNetworkConfigRecreated', 'recreated with the addresses it held');
    // Its restore annotation holds them now.
    await clearNodeRestore(ctx, r);
    await restore(ctx, r, asks);
  } else {
    ctx.log.info('node network config created', { node: r.name });
    await serveStatus(ctx, r, asks);
  }
  return 'created';
}

/**
 * Merges the addresses kept for the node (and those its restore annotation
 * names) into its status, never dropping what the status holds; then the
 * annotation and the memory go.
 */
async function restore(ctx: SyncContext, r: RecordView, asks: SyncAsks): Promise<SyncOutcome> {
  for (let attempt = 0; attempt < ctx.config.conflictRetries; attempt++) {
    const nnc = r.nnc();
    if (!nnc || isTerminating(nnc)) return 'noop';
    const seen = r.nncSeen();
    const kept = [...(carried(r) ?? []), ...(restoreRecord(nnc) ?? [])];
    const plan = planFor(ctx, r, nnc);
    const written = await writeThroughGate(ctx, r, nnc, seen, {
      containers: mergeKept(dynamicContainers(nnc), kept, ctx.newId),
      requested: plan.invalid ? 0 : plan.requested,
      short: false,
      scaler: scalerFor(ctx, r),
    });
    if (written.kind === 'conflict') {
      await reread(ctx, r);
      continue;
    }
    if (written.kind === 'waiting') {
      // Its own primary IP is another node's now: what was kept is stale.
      ctx.log.warn('kept addresses dropped: another NodeNetworkConfig holds them', {
        node: r.name,
        addresses: addressesOf(kept).size,
      });
      subnetsChanged(asks, true);
    } else
      ctx.log.info('node network config restored', {
        node: r.name,
        addresses: addressesOf(kept).size,
      });
    await clearNodeRestore(ctx, r);
    await clearRestore(ctx, r);
    ctx.book.keep(r, undefined);
    return written.kind === 'written' ? 'restored' : 'noop';
  }
  throw new ConflictLoopError(`status of ${r.name} kept conflicting`);
}

/** The successor holds its addresses: its restore annotation goes (no later leader restores them again). */
async function clearRestore(ctx: SyncContext, r: RecordView): Promise<void> {
  if (restoreRecord(r.nnc()) === undefined) return;
  ctx.guard();
  const sent = nextSeq();
  ctx.book.answered('nnc', r.name, await ctx.lifecycleApi.clearRestore(r.name), sent);
}

/**
 * A live NNC without the addresses finalizer or its owner (made before it,
 * or by hand) gets both (docs/design/fulfiller.md#quarantine), then its
 * status round.
 */
async function adoptNnc(ctx: SyncContext, r: RecordView, asks: SyncAsks): Promise<SyncOutcome> {
  const uid = r.nodeInfo()?.uid;
  const owner = uid ? { name: r.name, uid } : undefined;
  if (!(await patchFinalizers(ctx, r, r.nnc()!, true, owner))) return 'noop';
  ctx.log.info('addresses finalizer added', { node: r.name });
  const outcome = await serveStatus(ctx, r, asks);
  return outcome === 'noop' ? 'adopted' : outcome;
}

/**
 * A gone Node's NNC is deleted, with the addresses finalizer on first (an
 * NNC made before it), so that it stays, terminating, as the quarantine's
 * record; its addresses are freed by `releaseNnc` once that is over.
 */
async function deleteNnc(ctx: SyncContext, r: RecordView, _asks: SyncAsks): Promise<SyncOutcome> {
  let nnc = r.nnc()!;
  if (addressesOf(dynamicContainers(nnc)).size > 0 && !hasAddressesFinalizer(nnc)) {
    const patched = await patchFinalizers(ctx, r, nnc, true);
    if (!patched) return 'noop'; // gone meanwhile
    nnc = patched;
  }
  ctx.guard();
  await ctx.lifecycleApi.delete(r.name, nnc.metadata.uid);
  ctx.metrics?.lifecycle('deleted');
  ctx.log.info('node network config deleted', { node: r.name, reason: 'node deleted' });
  return 'deleted';
}

/**
 * A gone Node's quarantine is over (its pods are gone, or the grace): its
 * addresses are freed in the backend, then the finalizer comes off and the
 * NNC goes; the book frees them when it is gone (the answer says so).
 */
async function releaseNnc(ctx: SyncContext, r: RecordView, asks: SyncAsks): Promise<SyncOutcome> {
  const nnc = r.nnc()!;
  const containers = dynamicContainers(nnc);
  ctx.guard();
  await ctx.backend.releaseAll(nodeRef(r.name, undefined), containers);
  ctx.book.letGo(r);
  if (!(await patchFinalizers(ctx, r, nnc, false))) return 'noop';
  ctx.log.info('addresses of a deleted node freed', {
    node: r.name,
    addresses: addressesOf(containers).size,
  });
  subnetsChanged(asks, true);
  return 'released';
}

/**
 * A terminating NNC under a live Node of its name (its own, deleted by
 * hand or by the garbage collector, or a gone Node's when the Node came
 * back): its addresses go to the live Node's record and its restore
 * annotation (node-restore.ts), kept for its successor, and the finalizer
 * comes off.
 */
async function replaceNnc(ctx: SyncContext, r: RecordView): Promise<SyncOutcome | 'again'> {
  // The garbage collector deletes the NNC after its Node, and the two
  // watches are not ordered with each other: the Node must live now.
  if (ctx.lists.getNode) {
    const sent = nextSeq();
    ctx.book.answered('node', r.name, await ctx.lists.getNode(r.name), sent);
    if (!ctx.book.liveRecord(r.name)) return 'again';
  }
  const live = ctx.book.liveRecord(r.name)!;
  const nnc = r.nnc()!;
  const containers = dynamicContainers(nnc);
  if (containers.length > 0 && !(await carryOnNode(ctx, live, containers))) return 'again';
  ctx.book.letGo(r, live, containers);
  if (!(await patchFinalizers(ctx, r, nnc, false))) return 'noop';
  ctx.log.warn('node network config deleted under a live node: recreated with its addresses', {
    node: r.name,
    addresses: addressesOf(containers).size,
  });
  return 'replaced';
}

/** Addresses kept for a gone Node go to the live Node of its name (it came back). */
function transfer(ctx: SyncContext, r: RecordView): SyncOutcome {
  const live = ctx.book.liveRecord(r.name)!;
  const containers = r.kept?.containers ?? [];
  ctx.book.letGo(r, live, containers);
  ctx.book.keep(r, undefined);
  ctx.book.quarantine(r, undefined);
  ctx.log.info('addresses of a deleted node go to its successor', {
    node: r.name,
    addresses: addressesOf(containers).size,
  });
  return 'noop';
}

/**
 * A gone Node's addresses are quarantined: recorded at first sight (the
 * grace from its NNC's deletionTimestamp, or from now for a memory-only
 * one), its pods looked for every interval (none left ends it early), and
 * the node runs again when the next look or the grace's end is due.
 */
async function quarantined(
  ctx: SyncContext,
  r: RecordView,
  asks: SyncAsks,
): Promise<SyncOutcome | 'again'> {
  const now = ctx.now();
  const nnc = r.nnc();
  if (quarantineState(r, now) === 'unrecorded' && nnc) {
    const q = quarantineOf(nnc, ctx.config.quarantineMs, now);
    ctx.book.quarantine(r, q);
    ctx.log.info('addresses of a deleted node quarantined', {
      node: r.name,
      addresses: addressesOf(dynamicContainers(nnc)).size,
      until: new Date(q.until).toISOString(),
      record: 'terminating NodeNetworkConfig',
    });
  }
  const q = r.quarantine;
  if (!q) return 'noop';
  if (lookDue(ctx, r)) {
    if (q.nextLook === undefined) {
      // The first look waits an interval too: the pod GC takes 40 s.
      ctx.book.quarantine(r, { ...q, nextLook: now + ctx.config.quarantinePodCheckMs });
    } else if (await podsGone(ctx, r)) {
      ctx.log.info('quarantine ends early: no pod is bound to the deleted node', { node: r.name });
      return 'again';
    }
  }
  const next = Math.min(r.quarantine!.until, r.quarantine!.nextLook ?? Infinity);
  requeueAfter(asks, next - now + 1);
  return 'quarantined';
}

/** A quarantined node's pods are looked for now (only with a pod lister). */
function lookDue(ctx: SyncContext, r: RecordView): boolean {
  const q = r.quarantine;
  if (!q || q.podsGone || !ctx.lists.anyPodOn) return false;
  return q.nextLook === undefined || ctx.now() >= q.nextLook;
}

/** Looks for a pod bound to the node; a failed look is tried again with backoff. */
async function podsGone(ctx: SyncContext, r: RecordView): Promise<boolean> {
  const q = r.quarantine!;
  try {
    const any = await ctx.lists.anyPodOn!(r.name);
    const now = ctx.now();
    ctx.book.quarantine(r, {
      ...q,
      lookFailures: 0,
      ...(any ? { nextLook: now + ctx.config.quarantinePodCheckMs } : { podsGone: true }),
    });
    return !any;
  } catch (err) {
    const failures = q.lookFailures + 1;
    const delayMs = Math.min(
      ctx.config.backoff.maxMs,
      ctx.config.backoff.initialMs * 2 ** (failures - 1),
    );
    ctx.log.warn('pods of a quarantined node not listed', {
      node: r.name,
      error: apiErrorInfo(err).message,
      retryInMs: delayMs,
    });
    ctx.book.quarantine(r, { ...q, lookFailures: failures, nextLook: ctx.now() + delayMs });
    return false;
  }
}

/**
 * Addresses kept for a Node that is gone now, without an NNC (kept for a
 * successor, or rescued from its pods): quarantined in this term's memory
 * for the grace (docs/design/fulfiller.md#quarantine).
 */
function quarantineKept(ctx: SyncContext, r: RecordView, asks: SyncAsks): SyncOutcome {
  const kept = r.kept!;
  const now = ctx.now();
  const until = now + ctx.config.quarantineMs;
  ctx.book.keep(r, { containers: kept.containers, why: 'quarantine' });
  ctx.book.quarantine(r, { nncUid: '', until, lookFailures: 0 });
  ctx.log.info('addresses of a deleted node quarantined', {
    node: r.name,
    addresses: addressesOf(kept.containers).size,
    until: new Date(until).toISOString(),
    record: 'memory',
  });
  requeueAfter(asks, until - now + 1);
  return 'quarantined';
}

/** A gone Node's memory-only quarantine is over: what it kept is freed. */
async function forget(ctx: SyncContext, r: RecordView, asks: SyncAsks): Promise<SyncOutcome> {
  const containers = r.kept?.containers ?? [];
  ctx.guard();
  await ctx.backend.releaseAll(nodeRef(r.name, undefined), containers);
  ctx.book.keep(r, undefined);
  ctx.book.quarantine(r, undefined);
  ctx.log.info('addresses of a deleted node freed', {
    node: r.name,
    addresses: addressesOf(containers).size,
  });
  subnetsChanged(asks, true);
  return 'forgotten';
}

/**
 * Puts the addresses finalizer (and with `owner` the ownerReference) on or
 * off with the version read as the precondition; undefined when the NNC is
 * gone (404). A 409 is thrown, so the queue runs the node again after its
 * backoff (controller-runtime's requeue on a conflict).
 */
async function patchFinalizers(
  ctx: SyncContext,
  r: RecordView,
  nnc: NodeNetworkConfig,
  ours: boolean,
  owner?: { name: string; uid: string },
): Promise<NodeNetworkConfig | undefined> {
  const name = nnc.metadata.name;
  ctx.guard();
  const sent = nextSeq();
  try {
    const patched = await ctx.lifecycleApi.setFinalizers(nnc, finalizersWith(nnc, ours), owner);
    // Its last finalizer removed, a terminating NNC is gone: the answer says so.
    if (isTerminating(patched) && (patched.metadata.finalizers ?? []).length === 0)
      ctx.book.gone('nnc', name, patched.metadata.uid ?? '');
    else ctx.book.answered('nnc', name, patched, sent);
    return patched;
  } catch (err) {
    if (isNotFound(err)) {
      ctx.book.answered('nnc', name, undefined, sent);
      return undefined;
    }
    throw asNncConflict(name, err);
  }
}
