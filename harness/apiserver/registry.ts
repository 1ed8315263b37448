// The verbs on stored objects, with the semantics clients rely on: uid and
// creationTimestamp on create, optimistic concurrency on update (409), status
// subresource separation, generation bumps on spec changes, finalizers and
// deletionTimestamp, namespace existence, CRD validation and pruning,
// managedFields, no-op writes that change nothing (not even resourceVersion).
import { randomUUID } from 'node:crypto';
import { serverSideApply } from './apply.ts';
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  notFound,
  unsupportedMediaType,
  type StatusCause,
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
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.ts';
import { apiVersionOf, resourceFromCrd, resourceKey, type ResourceInfo } from './resources.ts';
import { validateCustomResource } from './schema.ts';
import { deletePolicy, deletionFinalizers, finalizersOf } from './delete-options.ts';
import { validateOwnerReferences } from './owner-references.ts';
import { checkWrite, type FieldCheck } from './validation/index.ts';
import type { Selector } from '../../src/kube/selectors.ts';
import type { ObjectStore, StoreEvent } from './store.ts';

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

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

export interface ListOptions {
  selector: Selector;
  /** The selector's `metadata.name=X` term, if it has one: only the object named X can match. */
  name?: string;
  limit?: number;
  continueToken?: string;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAMESPACE_KEY = 'namespaces';

/** Everything but metadata and status: what `generation` tracks. */
function specPart(obj: KObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj))
    if (k !== 'metadata' && k !== 'status' && k !== 'apiVersion' && k !== 'kind') out[k] = v;
  return out;
}

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

export interface ContinueToken {
  rv: number;
  start: string;
}

export function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

export function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
    if (typeof t.rv === 'number' && typeof t.start === 'string') return t;
  } catch {
    // fall through
  }
  throw badRequest(
    'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
  );
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

  list(
    res: ResourceInfo,
    ns: string | undefined,
    opts: ListOptions,
  ): { items: KObject[]; rv: number; continue?: string; remaining?: number } {
    const rv = this.store.currentRv();
    let start = '';
    if (opts.continueToken) {
      const t = decodeContinue(opts.continueToken);
      if (t.rv < this.store.oldestWatchableRv())
        throw new ApiError(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      start = t.start;
    }
    const scope = res.namespaced ? ns : undefined;
    // A name term narrows the list to one key, within one namespace or none,
    // as kube-apiserver's generic store does: ListPredicate turns a predicate
    // whose field selector requires metadata.name (SelectionPredicate.
    // MatchesSingle) into a read of that one key when the key can be made
    // (KeyFunc fails for a namespaced resource listed across namespaces,
    // which then lists). k8s.io/apiserver/pkg/registry/generic/registry/store.go.
    const byName = opts.name !== undefined && (!res.namespaced || ns) ? opts.name : undefined;
    const all = this.store.list(resourceKey(res), scope, opts.selector, byName);
    const items: KObject[] = [];
    let remaining = 0;
    let next: string | undefined;
    for (const obj of all) {
      const key = `${String(obj.metadata.namespace ?? '')}/${String(obj.metadata.name)}`;
      if (start && key <= start) continue;
      if (opts.limit && items.length >= opts.limit) {
        remaining++;
        continue;
      }
      items.push(obj);
      if (opts.limit && items.length === opts.limit) next = key;
    }
    const out: { items: KObject[]; rv: number; continue?: string; remaining?: number } = {
      items,
      rv,
    };
    if (remaining > 0 && next !== undefined) {
      out.continue = encodeContinue({ rv, start: next });
      out.remaining = remaining;
    }
    return out;
  }

  private checkNamespace(res: ResourceInfo, ns: string | undefined): void {
    if (!res.namespaced) return;
    if (!ns)
      throw badRequest('the server could not find the requested resource: a namespace is required');
    if (!this.store.get(NAMESPACE_KEY, undefined, ns)) throw notFound('', 'namespaces', ns);
  }

  /** Common shape checks of a body naming an object of `res`. */
  private checkBody(res: ResourceInfo, body: Json, ns: string | undefined, name?: string): KObject {
    if (!isObject(body)) throw badRequest('the body of the request must be a JSON/YAML object');
    if (body.metadata !== undefined && !isObject(body.metadata))
      throw badRequest('metadata must be an object');
    const obj = body as KObject;
    if (!obj.metadata) obj.metadata = {};
    const kind = obj.kind;
    if (kind !== undefined && kind !== res.kind)
      throw badRequest(
        `the kind of the object (${String(kind)}) does not match the resource (${res.kind})`,
      );
    if (
      obj.apiVersion !== undefined &&
      !res.versions.some((v) => apiVersionOf(res.group, v) === obj.apiVersion)
    )
      throw badRequest(
        `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersionOf(res.group, res.version)})`,
      );
    if (res.namespaced) {
      const bodyNs = obj.metadata.namespace;
      if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== ns)
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      obj.metadata.namespace = ns as string;
    } else delete obj.metadata.namespace;
    if (name !== undefined && obj.metadata.name !== undefined && obj.metadata.name !== name)
      throw badRequest(
        'the name of the object (' +
          String(obj.metadata.name) +
          ') does not match the name on the URL (' +
          name +
          ')',
      );
    if (name !== undefined) obj.metadata.name = name;
    obj.apiVersion = apiVersionOf(res.group, res.version);
    obj.kind = res.kind;
    return obj;
  }

  private validate(
    res: ResourceInfo,
    obj: KObject,
    opts: { strict?: boolean; fields?: FieldCheck } = {},
    prev?: KObject,
  ): void {
    const causes: StatusCause[] = [];
    const name = obj.metadata.name;
    if (typeof name !== 'string' || name === '')
      causes.push({
        reason: 'FieldValueRequired',
        field: 'metadata.name',
        message: 'Required value: name or generateName is required',
      });
    else if (res.group === 'rbac.authorization.k8s.io') {
      // RBAC names are path segments (system:discovery), as upstream validates them.
      if (name === '.' || name === '..' || /[/%]/.test(name))
        causes.push({
          reason: 'FieldValueInvalid',
          field: 'metadata.name',
          message: `Invalid value: "${name}": may not be '.' or '..' or contain '/' or '%'`,
        });
    } else if (
      name.length > 253 ||
      !(res.plural === 'namespaces' ? DNS1123_LABEL : DNS1123_SUBDOMAIN).test(name)
    )
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.name',
        message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
      });
    for (const mk of ['labels', 'annotations']) {
      const m = obj.metadata[mk];
      if (m === undefined) continue;
      if (!isObject(m) || Object.values(m).some((v) => typeof v !== 'string'))
        causes.push({
          reason: 'FieldValueInvalid',
          field: `metadata.${mk}`,
          message: 'Invalid value: must be a map of strings',
        });
    }
    causes.push(...validateOwnerReferences(obj));
    if (prev) causes.push(...noNewFinalizers(prev, obj));
    const pruned: string[] = [];
    if (res.schema) causes.push(...validateCustomResource(obj, res.schema, pruned));
    // Decoding, unknown fields and the kind's own rules, as kube-apiserver (validation/).
    causes.push(...checkWrite(res, obj, prev, pruned, opts.fields, opts.strict === true));
    if (causes.length > 0) throw invalid(res.kind, res.group, String(name ?? ''), causes);
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
    const obj = this.checkBody(res, body, ns);
    this.checkNamespace(res, ns);
    const m = obj.metadata;
    if (
      (m.name === undefined || m.name === '') &&
      typeof m.generateName === 'string' &&
      m.generateName
    )
      m.name = m.generateName + randomUUID().replace(/-/g, '').slice(0, 5);
    this.validate(res, obj, opts);
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
    const out = this.carryOver(res, prev, next, subresource, opts);
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
    const obj = this.checkBody(res, body, ns, name);
    const prev = this.get(res, ns, name);
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
    let patched: Json;
    switch (contentType) {
      case PATCH_TYPES.json:
        patched = jsonPatch(prev, body);
        break;
      case PATCH_TYPES.merge:
        if (!isObject(body)) throw badRequest('merge patch must be a JSON object');
        patched = mergePatch(prev, body);
        break;
      case PATCH_TYPES.strategic:
        if (!res.strategicMerge) throw unsupportedMediaType(contentType);
        patched = strategicMergePatch(prev, body);
        break;
      default:
        throw unsupportedMediaType(contentType);
    }
    if (!isObject(patched) || !isObject(patched.metadata))
      throw new ApiError(422, 'Invalid', 'the patch removed metadata');
    const next = patched as KObject;
    // A resourceVersion the patch sets is a precondition, as for a PUT: 409
    // when it is not the stored one (kubernetes/kubernetes#15416, and the
    // test-cmd case of #15420 that a patch with another version is refused).
    if (
      next.metadata.resourceVersion !== undefined &&
      next.metadata.resourceVersion !== prev.metadata.resourceVersion
    )
      throw conflict(
        res.group,
        res.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    if (next.metadata.name !== name)
      throw badRequest('the name of the object cannot be changed by a patch');
    if (next.kind !== undefined && next.kind !== res.kind)
      throw badRequest('the kind of the object cannot be changed by a patch');
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
    const applied = this.checkBody(res, body, ns, name);
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
      this.validate(res, next, opts);
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
    const out = this.carryOver(res, prev, next, subresource, opts);
    if (managed === undefined) delete out.metadata.managedFields;
    else out.metadata.managedFields = managed;
    return this.commitUpdate(res, prev, out, opts);
  }

  /** The object a write produces: status or main part from `next`, the rest and immutable metadata from `prev`. */
  private carryOver(
    res: ResourceInfo,
    prev: KObject,
    next: KObject,
    subresource: string | undefined,
    opts: WriteOptions | undefined = undefined,
  ): KObject {
    let out: KObject;
    if (subresource === 'status') {
      // A stored object is never changed in place (each write builds new
      // objects, sharing what it keeps), so a built-in kind's status write
      // shares the rest of prev. A custom resource is pruned by its schema
      // below, in place: it gets a copy of its own.
      out = res.crdName === undefined ? { ...prev, metadata: { ...prev.metadata } } : clone(prev);
      if (next.status === undefined) delete out.status;
      else out.status = next.status;
    } else {
      out = next;
      if (res.statusSubresource) {
        if (prev.status === undefined) delete out.status;
        else out.status = clone(prev.status);
      }
    }
    const m = out.metadata;
    for (const k of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'namespace',
      'name',
    ]) {
      if (prev.metadata[k] === undefined) delete m[k];
      else m[k] = prev.metadata[k] as Json;
    }
    out.apiVersion = apiVersionOf(res.group, res.version);
    out.kind = res.kind;
    if (res.generation) {
      const gen = typeof prev.metadata.generation === 'number' ? prev.metadata.generation : 1;
      m.generation = deepEqual(specPart(prev), specPart(out)) ? gen : gen + 1;
    } else delete m.generation;
    this.validate(res, out, opts, prev);
    if (isCrdResource(res)) decorateCrd(out);
    if (
      isCrdResource(res) &&
      isObject(prev.spec) &&
      isObject(out.spec) &&
      prev.spec.group !== out.spec.group
    )
      throw invalid(res.kind, res.group, String(m.name), [
        { field: 'spec.group', message: 'Invalid value: field is immutable' },
      ]);
    return out;
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
    if (isObject(body) && isObject(body.preconditions)) {
      const pre = body.preconditions;
      if (pre.uid !== undefined && pre.uid !== null && pre.uid !== prev.metadata.uid)
        throw conflict(
          res.group,
          res.plural,
          name,
          `Precondition failed: UID in precondition: ${String(pre.uid)}, UID in object meta: ${String(prev.metadata.uid)}`,
        );
      if (
        pre.resourceVersion !== undefined &&
        pre.resourceVersion !== null &&
        pre.resourceVersion !== prev.metadata.resourceVersion
      )
        throw conflict(
          res.group,
          res.plural,
          name,
          `Precondition failed: ResourceVersion in precondition: ${String(pre.resourceVersion)}, ResourceVersion in object meta: ${String(prev.metadata.resourceVersion)}`,
        );
    }
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

  /** The parsed patch content type, or 415. */
  static patchType(contentType: string | undefined): string {
    const ct = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if ((Object.values(PATCH_TYPES) as string[]).includes(ct)) return ct;
    throw unsupportedMediaType(ct || '(none)');
  }
}

export function isCrdResource(res: ResourceInfo): boolean {
  return res.group === 'apiextensions.k8s.io' && res.plural === 'customresourcedefinitions';
}

/** Checks a CRD (422 when it registers nothing usable) and sets the status the real server reports. */
export function decorateCrd(crd: KObject): void {
  let info: ResourceInfo;
  try {
    info = resourceFromCrd(crd);
  } catch (err) {
    throw invalid(
      'CustomResourceDefinition',
      'apiextensions.k8s.io',
      String(crd.metadata.name ?? ''),
      [{ reason: 'FieldValueInvalid', field: 'spec', message: (err as Error).message }],
    );
  }
  const spec = crd.spec as JsonObject;
  const time =
    typeof crd.metadata.creationTimestamp === 'string' ? crd.metadata.creationTimestamp : '';
  const cond = (type: string, reason: string, message: string): JsonObject => ({
    type,
    status: 'True',
    lastTransitionTime: time,
    reason,
    message,
  });
  crd.status = {
    acceptedNames: clone(spec.names as JsonObject),
    conditions: [
      cond('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      cond('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    storedVersions: [info.version],
  };
}

export function asObject(v: Json): JsonObject | undefined {
  return isObject(v) ? v : undefined;
}

/**
 * An object being deleted takes no new finalizer, as apimachinery's
 * ValidateObjectMetaUpdate refuses it (ValidateNoNewFinalizers,
 * k8s.io/apimachinery/pkg/api/validation/objectmeta.go): otherwise a
 * finalizer could keep it forever after its deletion was asked.
 */
function noNewFinalizers(prev: KObject, next: KObject): StatusCause[] {
  if (prev.metadata.deletionTimestamp === undefined) return [];
  const old = new Set(finalizersOf(prev));
  // Go's sets.String.List(): sorted, without duplicates.
  const extra = [...new Set(finalizersOf(next).filter((f) => !old.has(f)))].sort();
  if (extra.length === 0) return [];
  return [
    {
      reason: 'FieldValueForbidden',
      field: 'metadata.finalizers',
      message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${extra.map((f) => JSON.stringify(f)).join(', ')}}`,
    },
  ];
}
