// The addresses of an NNC let go under a live Node travel on that Node
// (docs/design/fulfiller.md#nnc-lifecycle): its name cannot hold the
// successor until the terminating NNC is gone, and between the two no NNC
// holds them. So before the NNC's finalizer comes off they are written into
// the Node's restore annotation, with the addresses finalizer on the Node:
// deleted meanwhile, it stays, terminating, with them. They come off
// together once the successor's own restore annotation holds them; a
// terminating Node's successor is then deleted in turn, and its NNC's
// quarantine holds them. Any leader finds them in its fresh Node list.
import { isConflict, isNotFound } from '../kube/errors.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import { nextSeq } from './node-book.ts';
import type { RecordView } from './node-record.ts';
import type { SyncContext } from './sync-context.ts';

/** What the node is to get back: what this term keeps for it and what its Node's annotation names. */
export function carried(r: RecordView): NetworkContainer[] | undefined {
  const kept = r.kept?.containers ?? [];
  const onNode = r.nodeRestore() ?? [];
  if (kept.length === 0 && onNode.length === 0) return undefined;
  return mergeById(onNode, kept);
}

/** The containers of `a` and `b`, one per id (b's when both have it). */
export function mergeById(a: NetworkContainer[], b: NetworkContainer[]): NetworkContainer[] {
  const ids = new Set(b.map((nc) => nc.id));
  return [...a.filter((nc) => !ids.has(nc.id)), ...b];
}

/**
 * Writes `containers` (with what the annotation named already) onto the
 * live Node; false when that Node is gone (a 404). A 422 (the name holds
 * another Node now) or a 409 (it changed: read again) is thrown, so the
 * queue runs the name again.
 */
export async function carryOnNode(
  ctx: SyncContext,
  live: RecordView,
  containers: NetworkContainer[],
): Promise<boolean> {
  return setNodeRestore(ctx, live, mergeById(live.nodeRestore() ?? [], containers));
}

/** The successor's own annotation (or status) holds them: the Node's annotation and finalizer go. */
export async function clearNodeRestore(ctx: SyncContext, r: RecordView): Promise<void> {
  if (r.nodeRestore() === undefined) return;
  await setNodeRestore(ctx, r, undefined);
}

async function setNodeRestore(
  ctx: SyncContext,
  r: RecordView,
  restore: NetworkContainer[] | undefined,
): Promise<boolean> {
  const node = r.nodeObject();
  if (!node) return false;
  ctx.guard();
  const sent = nextSeq();
  try {
    const patched = await ctx.lifecycleApi.setNodeRestore(node, restore);
    // Its last finalizer removed, a terminating Node is gone: the answer says so.
    const m = patched.metadata;
    if (m?.deletionTimestamp && (m.finalizers ?? []).length === 0)
      ctx.book.gone('node', r.name, m.uid ?? '');
    else ctx.book.answered('node', r.name, patched, sent);
    return true;
  } catch (err) {
    if (isNotFound(err)) {
      ctx.book.answered('node', r.name, undefined, sent);
      return false;
    }
    if (isConflict(err) && ctx.lists.getNode) {
      const again = nextSeq();
      ctx.book.answered('node', r.name, await ctx.lists.getNode(r.name), again);
    }
    throw err;
  }
}
