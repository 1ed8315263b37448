// The garbage collector's writes, made as kube-controller-manager: merge
// patches of an object's ownerReferences or finalizers on the version it
// read, and deletes with a propagation policy and the object's uid as
// precondition (operations.go). They go without the request path's admission.
import type { Logger } from '../../src/log/logger.ts';
import type { PropagationPolicy } from './delete-options.ts';
import { finalizersOf } from './delete-options.ts';
import type { JsonObject, KObject } from '../../src/kube/json-object.ts';
import { itemId, uidOf } from './dependency-graph.ts';
import { ownerRefs } from './owner-references.ts';
import { PATCH_TYPES } from './patch-types.ts';
import type { Registry, WriteOptions } from './registry.ts';
import { resourceKey, type ResourceInfo } from './resources.ts';

/** Field manager of the collector's writes (kube-controller-manager's user agent). */
const MANAGER = 'kube-controller-manager';

export class CollectorWrites {
  private readonly registry: Registry;
  private readonly logger: Logger;

  constructor(registry: Registry, logger: Logger) {
    this.registry = registry;
    this.logger = logger;
  }

  private writeOptions(): WriteOptions {
    return { fieldManager: MANAGER, dryRun: false };
  }

  private ns(obj: KObject): string | undefined {
    return typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : undefined;
  }

  /** Keeps the references `keep` accepts (all unblocked with `unblock`), by a merge patch. */
  setOwnerRefs(
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
  removeFinalizer(res: ResourceInfo, obj: KObject, finalizer: string): void {
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
  deleteWith(res: ResourceInfo, obj: KObject, policy: PropagationPolicy): void {
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
