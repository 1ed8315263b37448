// The owner-reference garbage collector, as kube-controller-manager's
// (pkg/controller/garbagecollector in kubernetes/kubernetes), in process:
// it follows every store event, keeps which objects name which owner uid,
// and a short while after a change looks again at what the change touched:
//
// - a dependent whose owners are all gone (absent, or present under another
//   uid) is deleted; one that keeps a live owner only loses the references
//   to the gone ones (attemptToDeleteItem, garbagecollector.go);
// - an owner deleted with propagationPolicy=Foreground (finalizer
//   foregroundDeletion) has its dependents deleted, and loses the finalizer
//   once no dependent with blockOwnerDeletion: true is left
//   (processDeletingDependentsItem, garbagecollector.go);
// - an owner deleted with propagationPolicy=Orphan (finalizer orphan) is
//   removed from its dependents' ownerReferences, then loses the finalizer
//   (attemptToOrphanWorker and orphanDependents, garbagecollector.go).
//
// A dependent that has finalizers of its own is only marked for deletion
// (deletionTimestamp) and stays until they are removed, as the registry does
// for any delete. Its writes are made as kube-controller-manager, without
// the request path's admission (the real one's go through the API with its
// own credentials; no policy of ours applies to it).
import type { Logger } from '../../src/log/logger.ts';
import { ApiError } from './errors.ts';
import {
  FOREGROUND_FINALIZER,
  ORPHAN_FINALIZER,
  finalizersOf,
  type PropagationPolicy,
} from './delete-options.ts';
import { type Json, type JsonObject, type KObject } from '../../src/kube/json-object.ts';
import { ownerRefs, splitApiVersion } from './owner-references.ts';
import { PATCH_TYPES } from './patch-types.ts';
import { type Registry, type WriteOptions } from './registry.ts';
import { resourceKey, type ResourceCatalog, type ResourceInfo } from './resources.ts';
import type { ObjectStore, StoreEvent } from './store.ts';

export interface GarbageCollectorOptions {
  store: ObjectStore;
  registry: Registry;
  catalog: ResourceCatalog;
  logger: Logger;
  /**
   * How long after a change the collector looks at what it touched, ms. The
   * real one is watch-driven and acts within a fraction of a second.
   */
  delayMs?: number;
}

/** Field manager of the collector's writes (kube-controller-manager's user agent). */
const MANAGER = 'kube-controller-manager';
const CRDS = 'apiextensions.k8s.io/customresourcedefinitions';
const MAX_RETRIES = 5;

/** An object's place in the store: `resource|namespace|name`. */
function itemId(resource: string, obj: KObject): string {
  const ns = typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : '';
  return `${resource}|${ns}|${String(obj.metadata.name)}`;
}

function parseId(id: string): { resource: string; namespace: string | undefined; name: string } {
  const [resource = '', ns = '', name = ''] = id.split('|');
  return { resource, namespace: ns || undefined, name };
}

const uidOf = (v: Json | undefined): string => (typeof v === 'string' ? v : '');

function sameRefs(a: JsonObject[], b: JsonObject[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (r, i) =>
        uidOf(r.uid) === uidOf(b[i]?.uid) && r.blockOwnerDeletion === b[i]?.blockOwnerDeletion,
    )
  );
}

type Verdict =
  | { kind: 'solid' }
  | { kind: 'dangling' }
  | { kind: 'waiting' }
  /** The reference cannot be resolved now (unknown kind): the item is looked at again later. */
  | { kind: 'unresolved' }
  /** A cluster-scoped object naming a namespaced owner: never collected. */
  | { kind: 'invalid' };

export class GarbageCollector {
  private readonly store: ObjectStore;
  private readonly registry: Registry;
  private readonly catalog: ResourceCatalog;
  private readonly logger: Logger;
  private readonly delayMs: number;
  /** Owner uid → ids of the objects whose ownerReferences name it. */
  private readonly dependents = new Map<string, Set<string>>();
  private readonly queue = new Set<string>();
  /** Items whose owner's kind is not served (yet): looked at again when a CRD changes. */
  private readonly unresolved = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: () => void;
  private stopped = false;

  constructor(opts: GarbageCollectorOptions) {
    this.store = opts.store;
    this.registry = opts.registry;
    this.catalog = opts.catalog;
    this.logger = opts.logger.child({ controller: 'garbage-collector' });
    this.delayMs = opts.delayMs ?? 20;
    // What the store holds already (the graph builder's initial list).
    for (const r of this.catalog.all()) {
      const key = resourceKey(r);
      for (const obj of this.store.list(key)) {
        const refs = ownerRefs(obj);
        if (refs.length === 0) continue;
        const id = itemId(key, obj);
        this.index(id, refs);
        this.enqueue(id);
      }
    }
    this.unsubscribe = this.store.subscribe((ev) => this.observe(ev));
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.queue.clear();
  }

  private index(id: string, refs: JsonObject[]): void {
    for (const r of refs) {
      const uid = uidOf(r.uid);
      if (!uid) continue;
      let set = this.dependents.get(uid);
      if (!set) this.dependents.set(uid, (set = new Set()));
      set.add(id);
    }
  }

  private unindex(id: string, refs: JsonObject[]): void {
    for (const r of refs) {
      const uid = uidOf(r.uid);
      const set = this.dependents.get(uid);
      if (!set) continue;
      set.delete(id);
      if (set.size === 0) this.dependents.delete(uid);
    }
  }

  /**
   * Follows one store event, synchronously and cheaply: the index, and what
   * to look at (the graph builder's processGraphChanges, graph_builder.go).
   */
  private observe(ev: StoreEvent): void {
    const obj = ev.object;
    const id = itemId(ev.resource, obj);
    const refs = ownerRefs(obj);
    if (ev.type === 'DELETED') {
      this.unindex(id, refs);
      this.unresolved.delete(id);
      // Its dependents may have lost their last owner.
      const deps = this.dependents.get(uidOf(obj.metadata.uid));
      if (deps) for (const d of deps) this.enqueue(d);
      // An owner deleting in the foreground may have waited for it.
      this.enqueueOwners(obj, refs);
      if (ev.resource === CRDS) this.retryUnresolved();
      return;
    }
    const prevRefs = ev.prev ? ownerRefs(ev.prev) : [];
    if (!sameRefs(refs, prevRefs)) {
      this.unindex(id, prevRefs);
      this.index(id, refs);
      if (refs.length > 0) this.enqueue(id);
      // A reference gone or no longer blocking may be what an owner waited for.
      if (ev.prev) this.enqueueOwners(ev.prev, prevRefs);
    }
    if (obj.metadata.deletionTimestamp) {
      const f = finalizersOf(obj);
      if (f.includes(FOREGROUND_FINALIZER) || f.includes(ORPHAN_FINALIZER)) this.enqueue(id);
    }
    if (ev.resource === CRDS) this.retryUnresolved();
  }

  private retryUnresolved(): void {
    for (const id of this.unresolved) this.enqueue(id);
    this.unresolved.clear();
  }

  /** Queues the owners `refs` name, where they can be found. */
  private enqueueOwners(dependent: KObject, refs: JsonObject[]): void {
    for (const ref of refs) {
      const res = this.ownerResource(ref);
      if (!res) continue;
      const ns = res.namespaced ? dependent.metadata.namespace : undefined;
      if (res.namespaced && typeof ns !== 'string') continue;
      this.enqueue(`${resourceKey(res)}|${ns ?? ''}|${String(ref.name)}`);
    }
  }

  private enqueue(id: string): void {
    if (this.stopped) return;
    this.queue.add(id);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), this.delayMs);
      this.timer.unref();
    }
  }

  /** Looks at every queued item; what that changes is queued for the next pass. */
  private flush(): void {
    this.timer = undefined;
    const batch = [...this.queue];
    this.queue.clear();
    for (const id of batch) {
      if (this.stopped) return;
      try {
        this.process(id);
        this.failures.delete(id);
      } catch (err) {
        this.failed(id, err);
      }
    }
  }

  /** A write that failed is tried again after a second, a few times (the work queue's rate limit). */
  private failed(id: string, err: unknown): void {
    if (err instanceof ApiError && err.code === 404) return;
    const n = (this.failures.get(id) ?? 0) + 1;
    this.failures.set(id, n);
    if (err instanceof ApiError && err.code === 409) {
      this.enqueue(id);
      return;
    }
    this.logger.warn('garbage collection failed', {
      item: id,
      attempt: n,
      error: err instanceof Error ? err.message : String(err),
    });
    if (n >= MAX_RETRIES) {
      this.failures.delete(id);
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.enqueue(id);
    }, 1000 * n);
    t.unref();
    this.timers.add(t);
  }

  /** The served resource of an owner reference's apiVersion and kind, if any. */
  private ownerResource(ref: JsonObject): ResourceInfo | undefined {
    if (typeof ref.apiVersion !== 'string' || typeof ref.kind !== 'string') return undefined;
    const { group, version } = splitApiVersion(ref.apiVersion);
    return this.catalog
      .all()
      .find((r) => r.group === group && r.kind === ref.kind && r.versions.includes(version));
  }

  /**
   * Whether the owner a reference names is there: the owner is looked up in
   * the dependent's namespace when its kind is namespaced, and must have the
   * reference's uid. isDangling and classifyReferences, garbagecollector.go.
   */
  private classify(dependent: KObject, ref: JsonObject): Verdict {
    const res = this.ownerResource(ref);
    if (!res) return { kind: 'unresolved' };
    const depNs =
      typeof dependent.metadata.namespace === 'string' ? dependent.metadata.namespace : undefined;
    if (res.namespaced && !depNs) return { kind: 'invalid' };
    const owner = this.store.get(
      resourceKey(res),
      res.namespaced ? depNs : undefined,
      String(ref.name),
    );
    if (!owner || owner.metadata.uid !== ref.uid) return { kind: 'dangling' };
    if (owner.metadata.deletionTimestamp && finalizersOf(owner).includes(FOREGROUND_FINALIZER))
      return { kind: 'waiting' };
    return { kind: 'solid' };
  }

  private process(id: string): void {
    const { resource, namespace, name } = parseId(id);
    const res = this.catalog.byKey(resource);
    if (!res) return;
    const obj = this.store.get(resource, namespace, name);
    if (!obj) return;
    if (obj.metadata.deletionTimestamp) {
      const f = finalizersOf(obj);
      if (f.includes(FOREGROUND_FINALIZER)) this.deleteDependentsFirst(res, obj);
      else if (f.includes(ORPHAN_FINALIZER)) this.orphanDependents(res, obj);
      // Otherwise it is on its way out and waits for its own finalizers.
      return;
    }
    const refs = ownerRefs(obj);
    if (refs.length === 0) return;
    const solid: JsonObject[] = [];
    const gone = new Set<string>();
    let waiting = false;
    for (const ref of refs) {
      const v = this.classify(obj, ref);
      if (v.kind === 'invalid') {
        // attemptToDeleteItem leaves such an object alone for good.
        this.logger.debug('cluster-scoped object names a namespaced owner', { item: id });
        return;
      }
      if (v.kind === 'unresolved') {
        this.unresolved.add(id);
        return;
      }
      if (v.kind === 'solid') solid.push(ref);
      else {
        gone.add(uidOf(ref.uid));
        if (v.kind === 'waiting') waiting = true;
      }
    }
    if (solid.length > 0) {
      // A live owner keeps it; references to gone owners and to owners
      // waiting for their dependents are dropped, or those would wait forever.
      if (gone.size > 0) this.setOwnerRefs(res, obj, (r) => !gone.has(uidOf(r.uid)));
      return;
    }
    const hasDependents = (this.dependents.get(uidOf(obj.metadata.uid))?.size ?? 0) > 0;
    if (waiting && hasDependents) {
      // An owner waits on it and it has dependents of its own: it goes in the
      // foreground too. If one of those is itself deleting in the
      // foreground, its own references stop blocking, against a cycle.
      if (this.anyDependentDeletingDependents(obj)) {
        this.setOwnerRefs(res, obj, () => true, true);
        const latest = this.store.get(resource, namespace, name);
        if (!latest) return;
        this.deleteWith(res, latest, 'Foreground');
        return;
      }
      this.deleteWith(res, obj, 'Foreground');
      return;
    }
    // No owner left: deleted, honouring a propagation finalizer it carries.
    const f = finalizersOf(obj);
    const policy: PropagationPolicy = f.includes(ORPHAN_FINALIZER)
      ? 'Orphan'
      : f.includes(FOREGROUND_FINALIZER)
        ? 'Foreground'
        : 'Background';
    this.deleteWith(res, obj, policy);
  }

  private anyDependentDeletingDependents(obj: KObject): boolean {
    for (const d of this.dependents.get(uidOf(obj.metadata.uid)) ?? []) {
      const { resource, namespace, name } = parseId(d);
      const dep = this.store.get(resource, namespace, name);
      if (dep?.metadata.deletionTimestamp && finalizersOf(dep).includes(FOREGROUND_FINALIZER))
        return true;
    }
    return false;
  }

  /** The objects naming `owner` in their ownerReferences, as they are now. */
  private dependentsOf(owner: KObject): { id: string; obj: KObject; res: ResourceInfo }[] {
    const out: { id: string; obj: KObject; res: ResourceInfo }[] = [];
    const uid = uidOf(owner.metadata.uid);
    for (const id of this.dependents.get(uid) ?? []) {
      const { resource, namespace, name } = parseId(id);
      const res = this.catalog.byKey(resource);
      const obj = this.store.get(resource, namespace, name);
      if (res && obj && ownerRefs(obj).some((r) => r.uid === uid)) out.push({ id, obj, res });
    }
    return out;
  }

  /**
   * Foreground deletion: every dependent is queued for deletion; the owner
   * keeps its finalizer while a dependent naming it with blockOwnerDeletion
   * is there (deleting or not), then loses it and is gone.
   */
  private deleteDependentsFirst(res: ResourceInfo, owner: KObject): void {
    const uid = uidOf(owner.metadata.uid);
    let blocking = 0;
    for (const d of this.dependentsOf(owner)) {
      if (ownerRefs(d.obj).some((r) => r.uid === uid && r.blockOwnerDeletion === true))
        blocking += 1;
      const deletingDependents =
        d.obj.metadata.deletionTimestamp && finalizersOf(d.obj).includes(FOREGROUND_FINALIZER);
      if (!deletingDependents) this.enqueue(d.id);
    }
    if (blocking === 0) this.removeFinalizer(res, owner, FOREGROUND_FINALIZER);
  }

  /** Orphan deletion: the dependents let go of the owner, then it loses its finalizer. */
  private orphanDependents(res: ResourceInfo, owner: KObject): void {
    const uid = uidOf(owner.metadata.uid);
    for (const d of this.dependentsOf(owner))
      this.setOwnerRefs(d.res, d.obj, (r) => uidOf(r.uid) !== uid);
    const latest = this.store.get(
      resourceKey(res),
      typeof owner.metadata.namespace === 'string' ? owner.metadata.namespace : undefined,
      String(owner.metadata.name),
    );
    if (latest && latest.metadata.uid === owner.metadata.uid)
      this.removeFinalizer(res, latest, ORPHAN_FINALIZER);
  }

  private writeOptions(): WriteOptions {
    return { fieldManager: MANAGER, dryRun: false };
  }

  private ns(obj: KObject): string | undefined {
    return typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : undefined;
  }

  /** Keeps the references `keep` accepts (all unblocked with `unblock`), by a merge patch. */
  private setOwnerRefs(
    res: ResourceInfo,
    obj: KObject,
    keep: (r: JsonObject) => boolean,
    unblock = false,
  ): void {
    const refs = ownerRefs(obj)
      .filter(keep)
      .map((r) =>
        unblock && r.blockOwnerDeletion === true ? { ...r, blockOwnerDeletion: false } : r,
      );
    this.logger.debug('owner references updated', {
      item: itemId(resourceKey(res), obj),
      ownerReferences: refs.length,
    });
    this.patchMetadata(res, obj, { ownerReferences: refs.length > 0 ? refs : null });
  }

  /** Removes one finalizer, by a merge patch on the version read (removeFinalizer, garbagecollector.go). */
  private removeFinalizer(res: ResourceInfo, obj: KObject, finalizer: string): void {
    const rest = finalizersOf(obj).filter((f) => f !== finalizer);
    this.patchMetadata(res, obj, { finalizers: rest.length > 0 ? rest : null });
  }

  /** A merge patch of metadata fields on the version read (a conflict if it moved meanwhile). */
  private patchMetadata(res: ResourceInfo, obj: KObject, fields: Record<string, unknown>): void {
    this.registry.patch(
      res,
      this.ns(obj),
      String(obj.metadata.name),
      PATCH_TYPES.merge,
      { metadata: { ...fields, resourceVersion: String(obj.metadata.resourceVersion) } },
      this.writeOptions(),
    );
  }

  /** Deletes with a propagation policy and the object's uid as precondition (deleteObject, operations.go). */
  private deleteWith(res: ResourceInfo, obj: KObject, policy: PropagationPolicy): void {
    this.logger.debug('deleting object whose owners are gone', {
      item: itemId(resourceKey(res), obj),
      propagationPolicy: policy,
    });
    this.registry.delete(
      res,
      this.ns(obj),
      String(obj.metadata.name),
      {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: policy,
        preconditions: {
          uid: uidOf(obj.metadata.uid),
          resourceVersion: String(obj.metadata.resourceVersion),
        },
      },
      false,
    );
  }
}
