// The pod garbage collector's rule for orphaned pods, as kube-controller-
// manager's (gcOrphaned, pkg/controller/podgc/gc_controller.go in
// kubernetes/kubernetes): a pod bound (spec.nodeName) to a Node that does
// not exist is deleted once that Node has been missing for the quarantine
// (upstream's quarantineTime, 40 s), the Node being looked up again at the
// end of it (discoverDeletedNodes). Before the delete the pod is marked
// Failed with a DisruptionTarget condition, reason DeletionByPodGC, unless it
// already ended; then it is deleted with grace period 0
// (markFailedAndDeletePodWithCondition, same file, 1.30+).
//
// Upstream's loop runs every 20 s (gcCheckPeriod) and a missing Node enters
// the quarantine when a pass first sees it, so its pods go 40-80 s after
// the Node; here the quarantine starts when the Node is deleted (or a pod is
// bound to a Node that is not there) and the pods go when it ends. Only this
// rule is played: not the terminated-pod threshold, not the out-of-service
// taint, not unscheduled terminating pods.
import type { Logger } from '../../src/log/logger.ts';
import { ApiError } from './errors.ts';
import { isObject, type Json, type JsonObject, type KObject } from '../../src/kube/json-object.ts';
import { rfc3339 } from './managed-fields.ts';
import { PATCH_TYPES } from './patch-types.ts';
import { type Registry } from './registry.ts';
import type { ResourceCatalog, ResourceInfo } from './resources.ts';
import type { ObjectStore, StoreEvent } from './store.ts';

/** Upstream's quarantineTime. */
export const POD_GC_ORPHAN_QUARANTINE_MS = 40_000;

export interface PodGcOptions {
  store: ObjectStore;
  registry: Registry;
  catalog: ResourceCatalog;
  logger: Logger;
  now: () => Date;
  /** How long a Node must be missing before its pods are deleted, ms (default 40 s). */
  quarantineMs?: number;
}

const MANAGER = 'kube-controller-manager';

function nodeNameOf(pod: KObject | undefined): string {
  const spec = pod && isObject(pod.spec) ? pod.spec : undefined;
  return spec && typeof spec.nodeName === 'string' ? spec.nodeName : '';
}

export class PodGarbageCollector {
  private readonly store: ObjectStore;
  private readonly registry: Registry;
  private readonly catalog: ResourceCatalog;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly quarantineMs: number;
  /** Missing node name → the end of its quarantine. */
  private readonly quarantine = new Map<string, NodeJS.Timeout>();
  private readonly unsubscribe: () => void;
  private stopped = false;

  constructor(opts: PodGcOptions) {
    this.store = opts.store;
    this.registry = opts.registry;
    this.catalog = opts.catalog;
    this.logger = opts.logger.child({ controller: 'pod-garbage-collector' });
    this.now = opts.now;
    this.quarantineMs = opts.quarantineMs ?? POD_GC_ORPHAN_QUARANTINE_MS;
    if (!Number.isFinite(this.quarantineMs) || this.quarantineMs < 0)
      throw new Error(`podGcOrphanMs must be a number >= 0, got ${this.quarantineMs}`);
    for (const pod of this.store.list('pods')) this.notice(nodeNameOf(pod));
    this.unsubscribe = this.store.subscribe((ev) => this.observe(ev));
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    for (const t of this.quarantine.values()) clearTimeout(t);
    this.quarantine.clear();
  }

  /** Node names currently in quarantine (for tests and reports). */
  quarantined(): string[] {
    return [...this.quarantine.keys()];
  }

  private observe(ev: StoreEvent): void {
    if (ev.resource === 'nodes') {
      if (ev.type === 'DELETED') this.notice(String(ev.object.metadata.name));
    } else if (ev.resource === 'pods' && ev.type !== 'DELETED') {
      const node = nodeNameOf(ev.object);
      if (node !== '' && node !== nodeNameOf(ev.prev)) this.notice(node);
    }
  }

  /**
   * Starts the quarantine of a node name that has no Node, unless it is in
   * quarantine already: the first sighting counts, as upstream's delaying
   * queue keeps an item's earliest time.
   */
  private notice(node: string): void {
    if (this.stopped || node === '' || this.quarantine.has(node)) return;
    if (this.store.get('nodes', undefined, node)) return;
    const t = setTimeout(() => this.collect(node), this.quarantineMs);
    t.unref();
    this.quarantine.set(node, t);
  }

  private collect(node: string): void {
    this.quarantine.delete(node);
    if (this.stopped || this.store.get('nodes', undefined, node)) return;
    const podsRes = this.catalog.byKey('pods');
    if (!podsRes) return;
    const pods = this.store.list('pods', undefined, (p) => nodeNameOf(p) === node);
    for (const pod of pods) {
      try {
        this.failAndDelete(podsRes, pod);
        this.logger.info('orphaned pod deleted', {
          pod: `${String(pod.metadata.namespace)}/${String(pod.metadata.name)}`,
          node,
        });
      } catch (err) {
        if (err instanceof ApiError && err.code === 404) continue;
        // Upstream logs and finds the pod again at its next pass.
        this.logger.warn('orphaned pod not deleted', {
          pod: `${String(pod.metadata.namespace)}/${String(pod.metadata.name)}`,
          node,
          error: err instanceof Error ? err.message : String(err),
        });
        this.notice(node);
      }
    }
  }

  /** Phase Failed and the DisruptionTarget condition, then a delete with grace 0, the pod's uid as precondition. */
  private failAndDelete(res: ResourceInfo, pod: KObject): void {
    const ns = String(pod.metadata.namespace);
    const name = String(pod.metadata.name);
    const uid = String(pod.metadata.uid);
    const status = isObject(pod.status) ? pod.status : {};
    if (status.phase !== 'Succeeded' && status.phase !== 'Failed') {
      const conditions = (Array.isArray(status.conditions) ? status.conditions : []).filter(
        isObject,
      );
      const at = rfc3339(this.now());
      const old = conditions.find((c) => c.type === 'DisruptionTarget');
      const condition: JsonObject = {
        type: 'DisruptionTarget',
        status: 'True',
        // UpdatePodCondition keeps the transition time when the status stays.
        lastTransitionTime:
          old && old.status === 'True' && typeof old.lastTransitionTime === 'string'
            ? old.lastTransitionTime
            : at,
        reason: 'DeletionByPodGC',
        message: 'PodGC: node no longer exists',
      };
      const next: Json[] = old
        ? conditions.map((c) => (c === old ? condition : c))
        : [...conditions, condition];
      this.registry.patch(
        res,
        ns,
        name,
        PATCH_TYPES.merge,
        { status: { phase: 'Failed', conditions: next } },
        { fieldManager: MANAGER, dryRun: false },
        'status',
      );
    }
    const latest = this.store.get('pods', ns, name);
    if (!latest || latest.metadata.uid !== uid) return;
    this.registry.delete(
      res,
      ns,
      name,
      { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid } },
      false,
    );
  }
}
