// The garbage collector's dependency graph (its graph builder's uidToNode,
// graph_builder.go, reduced to what the collector asks): which objects name
// which owner uid in their ownerReferences, by the objects' places in the store.
import type { Json, JsonObject, KObject } from '../../src/kube/json-object.ts';

/** An object's place in the store: `resource|namespace|name`. */
export function itemId(resource: string, obj: KObject): string {
  const ns = typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : '';
  return `${resource}|${ns}|${String(obj.metadata.name)}`;
}

export function parseId(id: string): {
  resource: string;
  namespace: string | undefined;
  name: string;
} {
  const [resource = '', ns = '', name = ''] = id.split('|');
  return { resource, namespace: ns || undefined, name };
}

export const uidOf = (v: Json | undefined): string => (typeof v === 'string' ? v : '');

export function sameRefs(a: JsonObject[], b: JsonObject[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (r, i) =>
        uidOf(r.uid) === uidOf(b[i]?.uid) && r.blockOwnerDeletion === b[i]?.blockOwnerDeletion,
    )
  );
}

export class DependencyGraph {
  /** Owner uid → ids of the objects whose ownerReferences name it. */
  private readonly byOwner = new Map<string, Set<string>>();

  /** Files the object at `id` under each owner its references name. */
  add(id: string, refs: JsonObject[]): void {
    for (const r of refs) {
      const uid = uidOf(r.uid);
      if (!uid) continue;
      let set = this.byOwner.get(uid);
      if (!set) this.byOwner.set(uid, (set = new Set()));
      set.add(id);
    }
  }

  /** Takes the object at `id` off the owners its references named. */
  remove(id: string, refs: JsonObject[]): void {
    for (const r of refs) {
      const uid = uidOf(r.uid);
      const set = this.byOwner.get(uid);
      if (!set) continue;
      set.delete(id);
      if (set.size === 0) this.byOwner.delete(uid);
    }
  }

  /** The ids of the objects naming the owner `uid` (none: undefined). */
  dependentsOf(uid: string): Set<string> | undefined {
    return this.byOwner.get(uid);
  }
}
