// The verbs on stored objects, with the semantics clients rely on: uid and
// creationTimestamp on create, optimistic concurrency on update (409), status
// subresource separation, generation bumps on spec changes, finalizers and
// deletionTimestamp, namespace existence, CRD validation and pruning,
// managedFields, no-op writes that change nothing (not even resourceVersion).
// The body and object checks are object-checks.ts, what an update keeps
// carry-over.ts, lists and their pages list-pages.ts, classic patches
// patch-types.ts, server-side apply apply.ts.
import { randomUUID } from 'node:crypto';
import { serverSideApply } from './apply.ts';
import { carryOver } from './carry-over.ts';
import { decorateCrd, isCrdResource } from './crd-status.ts';
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  notFound,
  unsupportedMediaType,
} from './errors.ts';
import { recordUpdate, rfc3339 } from './managed-fields.ts';
import {
  clone,
  deepEqual,
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../src/kube/json-object.ts';
import { listPage, type ListOptions, type ListPage } from './list-pages.ts';
import { checkBody, validateObject } from './object-checks.ts';
import { PATCH_TYPES, patchedObject } from './patch-types.ts';
import { apiVersionOf, resourceKey, type ResourceInfo } from './resources.ts';
import { checkPreconditions, deletePolicy, deletionFinalizers } from './delete-options.ts';
import type { FieldCheck } from './validation/index.ts';
import type { ObjectStore, StoreEvent } from './store.ts';

/**
 * Validating admission of the object about to be committed (null for a
 * delete) against the one it replaces (null for a create). Throws to refuse
 * the write; runs on dry runs and unchanged writes too, as upstream.
 */
export type Admission = (object: KObject | null, oldObject: KObject | null) => void;

export interface WriteOptions {
  fieldManager: string;
  dryRun: boolean;
  /** fieldValidation=Strict: unknown fields are rejected (400) instead of pruned. */
  strict?: boolean;
  /** The request's field validation (validation/fields.ts); none for the server's own writes. */
  fields?: FieldCheck;
  force?: boolean;
  /** The request's admission; none for the server's own writes (bootstrap objects). */
  admission?: Admission;
}

const NAMESPACE_KEY = 'namespaces';

/** Equal apart from resourceVersion and managedFields timestamps: then a write is a no-op. */
function sameContent(a: KObject, b: KObject): boolean {
  const strip = (o: KObject): KObject => {
    const m: JsonObject = { ...o.metadata };
    delete m.resourceVersion;
    if (Array.isArray(m.managedFields))
      m.managedFields = m.managedFields.map((e) => (isObject(e) ? { ...e, time: '' } : e));
    return { ...o, metadata: m };
  };
  return deepEqual(strip(a), strip(b));
}

export class Registry {
  private readonly store: ObjectStore;
  private readonly now: () => Date;
  private readonly onCrd: (ev: StoreEvent) => void;

  constructor(store: ObjectStore, now: () => Date, onCrd: (ev: StoreEvent) => void) {
    this.store = store;
    this.now = now;
    this.onCrd = onCrd;
  }

  get(res: ResourceInfo, ns: string | undefined, name: string): KObject {
    const obj = this.store.get(resourceKey(res), res.namespaced ? ns : undefined, name);
    if (!obj) throw notFound(res.group, res.plural, name);
    return obj;
  }

  /** One page of the list (list-pages.ts). */
  list(res: ResourceInfo, ns: string | undefined, opts: ListOptions): ListPage {
    return listPage(this.store, res, ns, opts);
  }

  private checkNamespace(res: ResourceInfo, ns: string | undefined): void {
    if (!res.namespaced) return;
    if (!ns)
      throw badRequest('the server could not find the requested resource: a namespace is required');
    if (!this.store.get(NAMESPACE_KEY, undefined, ns)) throw notFound('', 'namespaces', ns);
  }

  private commit(
    res: ResourceInfo,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    obj: KObject,
    prev: KObject | undefined,
    dryRun: boolean,
  ): KObject {
    if (dryRun) return obj;
    const ev = this.store.commit(type, resourceKey(res), obj, prev);
    if (res.plural === 'customresourcedefinitions' && res.group === 'apiextensions.k8s.io')
      this.onCrd(ev);
    return obj;
  }

  create(
    res: ResourceInfo,
    ns: string | undefined,
    body: Json,
    opts: WriteOptions,
    subresource?: string,
  ): KObject {
    if (subresource)
      throw new ApiError(
        405,
        'MethodNotAllowed',
        `create is not supported on ${res.plural}/${subresource}`,
      );
    const obj = checkBody(res, body, ns);
    this.checkNamespace(res, ns);
    const m = obj.metadata;
    if (
      (m.name === undefined || m.name === '') &&
      typeof m.generateName === 'string' &&
      m.generateName
    )
      m.name = m.generateName + randomUUID().replace(/-/g, '').slice(0, 5);
    validateObject(res, obj, opts);
    const name = String(m.name);
    if (this.store.get(resourceKey(res), res.namespaced ? ns : undefined, name))
      throw alreadyExists(res.group, res.plural, name);
    delete m.resourceVersion;
    delete m.deletionTimestamp;
    delete m.managedFields;
    m.uid = randomUUID();
    m.creationTimestamp = rfc3339(this.now());
    if (res.generation) m.generation = 1;
    else delete m.generation;
    this.initStatus(res, obj);
    if (isCrdResource(res)) decorateCrd(obj);
    recordUpdate(
      undefined,
      obj,
      opts.fieldManager,
      obj.apiVersion as string,
      undefined,
      this.now(),
    );
    opts.admission?.(obj, null);
    return this.commit(res, 'ADDED', obj, undefined, opts.dryRun);
  }

  private initStatus(res: ResourceInfo, obj: KObject): void {
    if (res.group === '' && res.plural === 'pods') {
      const phase = isObject(obj.status) && obj.status.phase ? obj.status.phase : 'Pending';
      obj.status = { ...(isObject(obj.status) ? obj.status : {}), phase };
    } else if (res.group === '' && res.plural === 'namespaces') obj.status = { phase: 'Active' };
    else if (res.crdName !== undefined && res.statusSubresource) delete obj.status;
  }

  /** Carries over what a write may not change, records field ownership, commits. */
  private finishUpdate(
    res: ResourceInfo,
    prev: KObject,
    next: KObject,
    opts: WriteOptions,
    subresource: string | undefined,
  ): KObject {
    const out = carryOver(res, prev, next, subresource, opts);
    recordUpdate(prev, out, opts.fieldManager, out.apiVersion as string, subresource, this.now());
    return this.commitUpdate(res, prev, out, opts);
  }

  /** Commits an updated object: deleted if its last finalizer went away, nothing if unchanged. */
  private commitUpdate(
    res: ResourceInfo,
    prev: KObject,
    out: KObject,
    { dryRun, admission }: WriteOptions,
  ): KObject {
    admission?.(out, prev);
    const finalizers = out.metadata.finalizers;
    if (out.metadata.deletionTimestamp && (!Array.isArray(finalizers) || finalizers.length === 0))
      return this.commit(res, 'DELETED', out, prev, dryRun);
    if (sameContent(prev, out)) return prev;
    return this.commit(res, 'MODIFIED', out, prev, dryRun);
  }

  update(
    res: ResourceInfo,
    ns: string | undefined,
    name: string,
    body: Json,
    opts: WriteOptions,
    subresource?: string,
  ): KObject {
    const obj = checkBody(res, body, ns, name);
    const prev = this.get(res, ns, name);
    // An update's uid is its precondition, checked before its
    // resourceVersion (apiserver/pkg/registry/rest/update.go,
    // defaultUpdatedObjectInfo.Preconditions; storage.Preconditions.Check).
    const uid = obj.metadata.uid;
    if (typeof uid === 'string' && uid !== '' && uid !== prev.metadata.uid)
      throw conflict(
        res.group,
        res.plural,
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${String(prev.metadata.uid)}`,
      );
    const rv = obj.metadata.resourceVersion;
    if (rv === undefined || rv === '') {
      if (res.crdName !== undefined)
        throw invalid(res.kind, res.group, name, [
          {
            reason: 'FieldValueInvalid',
            field: 'metadata.resourceVersion',
            message: 'Invalid value: 0x0: must be specified for an update',
          },
        ]);
    } else if (rv !== prev.metadata.resourceVersion) {
      throw conflict(
        res.group,
        res.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return this.finishUpdate(res, prev, obj, opts, subresource);
  }

  patch(
    res: ResourceInfo,
    ns: string | undefined,
    name: string,
    contentType: string,
    body: Json,
    opts: WriteOptions,
    subresource?: string,
  ): KObject {
    if (contentType === PATCH_TYPES.apply)
      return this.apply(res, ns, name, body, opts, subresource);
    if (contentType === PATCH_TYPES.strategic && !res.strategicMerge)
      throw unsupportedMediaType(contentType);
    const prev = this.get(res, ns, name);
    const next = patchedObject(res, prev, name, contentType, body);
    return this.finishUpdate(res, prev, next, opts, subresource);
  }

  private apply(
    res: ResourceInfo,
    ns: string | undefined,
    name: string,
    body: Json,
    opts: WriteOptions,
    subresource?: string,
  ): KObject {
    if (!opts.fieldManager || opts.fieldManager === 'unknown')
      throw badRequest('PATCH /apply requires a non-empty fieldManager query parameter');
    const applied = checkBody(res, body, ns, name);
    if (applied.metadata.managedFields !== undefined)
      throw badRequest('metadata.managedFields must be nil');
    opts.fields?.applied(res, applied);
    const prev = this.store.get(resourceKey(res), res.namespaced ? ns : undefined, name);
    if (prev === undefined && subresource) throw notFound(res.group, res.plural, name);
    const rv = applied.metadata.resourceVersion;
    if (prev && rv !== undefined && rv !== prev.metadata.resourceVersion)
      throw conflict(
        res.group,
        res.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    const next = serverSideApply(prev, applied, {
      manager: opts.fieldManager,
      force: opts.force === true,
      statusSubresource: res.statusSubresource,
      apiVersion: apiVersionOf(res.group, res.version),
      now: this.now(),
      ...(subresource ? { subresource } : {}),
    });
    if (!prev) {
      this.checkNamespace(res, ns);
      validateObject(res, next, opts);
      const m = next.metadata;
      m.uid = randomUUID();
      m.creationTimestamp = rfc3339(this.now());
      if (res.generation) m.generation = 1;
      delete m.resourceVersion;
      this.initStatus(res, next);
      if (isCrdResource(res)) decorateCrd(next);
      opts.admission?.(next, null);
      return this.commit(res, 'ADDED', next, undefined, opts.dryRun);
    }
    return this.finishApplied(res, prev, next, opts, subresource);
  }

  /** Like finishUpdate, but apply has already worked out managedFields. */
  private finishApplied(
    res: ResourceInfo,
    prev: KObject,
    next: KObject,
    opts: WriteOptions,
    subresource: string | undefined,
  ): KObject {
    const managed = next.metadata.managedFields;
    const out = carryOver(res, prev, next, subresource, opts);
    if (managed === undefined) delete out.metadata.managedFields;
    else out.metadata.managedFields = managed;
    return this.commitUpdate(res, prev, out, opts);
  }

  delete(
    res: ResourceInfo,
    ns: string | undefined,
    name: string,
    body: Json | undefined,
    dryRun: boolean,
    admission?: Admission,
  ): KObject {
    // DeleteOptions are validated before the object is looked up (delete.go).
    const policy = deletePolicy(body);
    const prev = this.get(res, ns, name);
    checkPreconditions(res, name, prev, body);
    admission?.(null, prev);
    // The propagation policy sets or clears the orphan and foregroundDeletion
    // finalizers, even on an object being deleted already; with finalizers
    // left the object is only marked (updateForGracefulDeletionAndFinalizers,
    // staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go).
    const { finalizers, changed } = deletionFinalizers(prev, policy, this.garbageCollection);
    if (finalizers.length > 0) {
      if (prev.metadata.deletionTimestamp && !changed) return prev;
      const next = clone(prev);
      if (changed) next.metadata.finalizers = finalizers;
      next.metadata.deletionTimestamp ??= rfc3339(this.now());
      next.metadata.deletionGracePeriodSeconds = 0;
      return this.commit(res, 'MODIFIED', next, prev, dryRun);
    }
    if (dryRun) return prev;
    // Namespaces take their objects with them; CRDs take their custom resources.
    if (res.group === '' && res.plural === 'namespaces') this.onNamespaceDeleted(name);
    const gone = clone(prev);
    return this.commit(res, 'DELETED', gone, prev, false);
  }

  /**
   * Set by the server when a garbage collector runs: DELETE's propagation
   * policy then leaves the orphan or foregroundDeletion finalizer for it.
   */
  garbageCollection = false;

  /** Set by the server: deletes every namespaced object of `ns`. */
  onNamespaceDeleted: (ns: string) => void = () => undefined;

  /** Deletes every object of a resource (in a namespace), for namespace and CRD clean-up. */
  deleteAll(resKey: string, ns: string | undefined): void {
    for (const obj of this.store.list(resKey, ns)) {
      this.store.commit('DELETED', resKey, clone(obj), obj);
    }
  }
}

export function asObject(v: Json): JsonObject | undefined {
  return isObject(v) ? v : undefined;
}
