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
import {
  FOREGROUND_FINALIZER,
  ORPHAN_FINALIZER,
  finalizersOf,
  type PropagationPolicy,
} from './delete-options.ts';
import { DependencyGraph, itemId, parseId, sameRefs, uidOf } from './dependency-graph.ts';
import { GcWorkQueue } from './gc-queue.ts';
import { CollectorWrites } from './gc-writes.ts';
import type { JsonObject, KObject } from '../../src/kube/json-object.ts';
import { ownerRefs, splitApiVersion } from './owner-references.ts';
import type { Registry } from './registry.ts';
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

const CRDS = 'apiextensions.k8s.io/customresourcedefinitions';

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
  private readonly catalog: ResourceCatalog;
  private readonly logger: Logger;
  private readonly graph = new DependencyGraph();
  private readonly queue: GcWorkQueue;
  private readonly writes: CollectorWrites;
  /** Items whose owner's kind is not served (yet): looked at again when a CRD changes. */
  private readonly unresolved = new Set<string>();
  private readonly unsubscribe: () => void;

  constructor(opts: GarbageCollectorOptions) {
    this.store = opts.store;
    this.catalog = opts.catalog;
    this.logger = opts.logger.child({ controller: 'garbage-collector' });
    this.queue = new GcWorkQueue(opts.delayMs ?? 20, this.logger, (id) => this.process(id));
    this.writes = new CollectorWrites(opts.registry, this.logger);
    // What the store holds already (the graph builder's initial list).
    for (const r of this.catalog.all()) {
      const key = resourceKey(r);
      for (const obj of this.store.list(key)) {
        const refs = ownerRefs(obj);
        if (refs.length === 0) continue;
        const id = itemId(key, obj);
        this.graph.add(id, refs);
        this.queue.add(id);
      }
    }
    this.unsubscribe = this.store.subscribe((ev) => this.observe(ev));
  }

  stop(): void {
    this.queue.stop();
    this.unsubscribe();
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
      this.graph.remove(id, refs);
      this.unresolved.delete(id);
      // Its dependents may have lost their last owner.
      const deps = this.graph.dependentsOf(uidOf(obj.metadata.uid));
      if (deps) for (const d of deps) this.queue.add(d);
      // An owner deleting in the foreground may have waited for it.
      this.enqueueOwners(obj, refs);
      if (ev.resource === CRDS) this.retryUnresolved();
      return;
    }
    const prevRefs = ev.prev ? ownerRefs(ev.prev) : [];
    if (!sameRefs(refs, prevRefs)) {
      this.graph.remove(id, prevRefs);
      this.graph.add(id, refs);
      if (refs.length > 0) this.queue.add(id);
      // A reference gone or no longer blocking may be what an owner waited for.
      if (ev.prev) this.enqueueOwners(ev.prev, prevRefs);
    }
    if (obj.metadata.deletionTimestamp) {
      const f = finalizersOf(obj);
      if (f.includes(FOREGROUND_FINALIZER) || f.includes(ORPHAN_FINALIZER)) this.queue.add(id);
    }
    if (ev.resource === CRDS) this.retryUnresolved();
  }

  private retryUnresolved(): void {
    for (const id of this.unresolved) this.queue.add(id);
    this.unresolved.clear();
  }

  /** Queues the owners `refs` name, where they can be found. */
  private enqueueOwners(dependent: KObject, refs: JsonObject[]): void {
    for (const ref of refs) {
      const res = this.ownerResource(ref);
      if (!res) continue;
      const ns = res.namespaced ? dependent.metadata.namespace : undefined;
      if (res.namespaced && typeof ns !== 'string') continue;
      this.queue.add(`${resourceKey(res)}|${ns ?? ''}|${String(ref.name)}`);
    }
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
      if (gone.size > 0) this.writes.setOwnerRefs(res, obj, (r) => !gone.has(uidOf(r.uid)));
      return;
    }
    const hasDependents = (this.graph.dependentsOf(uidOf(obj.metadata.uid))?.size ?? 0) > 0;
    if (waiting && hasDependents) {
      // An owner waits on it and it has dependents of its own: it goes in the
      // foreground too. If one of those is itself deleting in the
      // foreground, its own references stop blocking, against a cycle.
      if (this.anyDependentDeletingDependents(obj)) {
        this.writes.setOwnerRefs(res, obj, () => true, true);
        const latest = this.store.get(resource, namespace, name);
        if (!latest) return;
        this.writes.deleteWith(res, latest, 'Foreground');
        return;
      }
      this.writes.deleteWith(res, obj, 'Foreground');
      return;
    }
    // No owner left: deleted, honouring a propagation finalizer it carries.
    const f = finalizersOf(obj);
    const policy: PropagationPolicy = f.includes(ORPHAN_FINALIZER)
      ? 'Orphan'
      : f.includes(FOREGROUND_FINALIZER)
        ? 'Foreground'
        : 'Background';
    this.writes.deleteWith(res, obj, policy);
  }

  private anyDependentDeletingDependents(obj: KObject): boolean {
    for (const d of this.graph.dependentsOf(uidOf(obj.metadata.uid)) ?? []) {
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
    for (const id of this.graph.dependentsOf(uid) ?? []) {
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
      if (!deletingDependents) this.queue.add(d.id);
    }
    if (blocking === 0) this.writes.removeFinalizer(res, owner, FOREGROUND_FINALIZER);
  }

  /** Orphan deletion: the dependents let go of the owner, then it loses its finalizer. */
  private orphanDependents(res: ResourceInfo, owner: KObject): void {
    const uid = uidOf(owner.metadata.uid);
    for (const d of this.dependentsOf(owner))
      this.writes.setOwnerRefs(d.res, d.obj, (r) => uidOf(r.uid) !== uid);
    const latest = this.store.get(
      resourceKey(res),
      typeof owner.metadata.namespace === 'string' ? owner.metadata.namespace : undefined,
      String(owner.metadata.name),
    );
    if (latest && latest.metadata.uid === owner.metadata.uid)
      this.writes.removeFinalizer(res, latest, ORPHAN_FINALIZER);
  }
}
