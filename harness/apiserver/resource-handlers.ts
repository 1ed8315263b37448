// The local API server's resource requests, once routed, authenticated and
// authorized (server.ts): each handler takes the one request it serves
// (ResourceRequest), and a write takes its admission as a parameter of the
// registry call, so no request's admission is ever left on shared state.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccessControl } from './access.ts';
import { tokenRequestFromProtobuf } from './auth/token-request-protobuf.ts';
import { selfSubjectReview, type UserInfo } from './auth/user.ts';
import { bindingTarget, boundPod } from './binding.ts';
import { badRequest, methodNotAllowed, statusBody, unsupportedMediaType } from './errors.ts';
import type { Json, JsonObject, KObject } from '../../src/kube/json-object.ts';
import type { Admission, Registry, WriteOptions } from './registry.ts';
import { patchTypeOf } from './patch-types.ts';
import { apiVersionOf, resourceKey, type ResourceInfo } from './resources.ts';
import {
  bothSelectors,
  fieldSelector,
  labelSelector,
  SelectorError,
  type Selector,
} from '../../src/kube/selectors.ts';
import type { ObjectStore } from './store.ts';
import { toTable, wantsTable, type IncludeObject } from './table.ts';
import { startWatch, type ActiveWatch } from './watch.ts';
import { indexKeyOf, nameTermOf, type WatchIndex } from './watch-index.ts';
import { directiveOf, FieldCheck, type WriteVerb } from './validation/index.ts';
import { parseBody, send, truthy } from './http.ts';
import { ObjectJson } from './object-json.ts';
import { requestAdmission } from './request-admission.ts';
import { acceptedDelete, deleteOptionsFromQuery } from './delete-options.ts';

/** One resource request, as its handlers need it. */
export interface ResourceRequest {
  req: IncomingMessage;
  res: ServerResponse;
  resource: ResourceInfo;
  /** The version the client asked for (a CRD may serve several). */
  version: string;
  verb: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  query: URLSearchParams;
  body: Buffer | undefined;
  user: UserInfo;
}

/** What the handlers share with the server: its state, not any one request's. */
export interface ResourceHandlerDeps {
  registry: Registry;
  store: ObjectStore;
  access: AccessControl;
  now: () => Date;
  /** The open watches (the server stops them at close). */
  watches: Set<ActiveWatch>;
  watchIndex: WatchIndex;
  bookmarkMs: number;
}

const WRITES = ['create', 'update', 'patch', 'delete', 'deletecollection'];

/** The object as served at `version` (CRDs may serve several versions; no conversion needed here). */
function atVersion(res: ResourceInfo, version: string, obj: KObject): KObject {
  return version === res.version ? obj : { ...obj, apiVersion: apiVersionOf(res.group, version) };
}

function fieldsFrom(q: URLSearchParams, name?: string): string {
  const fields = q.get('fieldSelector') ?? '';
  if (!name) return fields;
  return fields ? `${fields},metadata.name=${name}` : `metadata.name=${name}`;
}

function selectorFrom(q: URLSearchParams, name?: string): Selector {
  try {
    return bothSelectors(labelSelector(q.get('labelSelector')), fieldSelector(fieldsFrom(q, name)));
  } catch (err) {
    // kube-apiserver answers a selector that does not parse with 400 BadRequest.
    if (err instanceof SelectorError) throw badRequest(err.message);
    throw err;
  }
}

function parsePositiveInt(q: URLSearchParams, key: string): number | undefined {
  const v = q.get(key);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw badRequest(`invalid ${key}: ${v}`);
  return n;
}

export class ResourceHandlers {
  private readonly d: ResourceHandlerDeps;
  /** Stored objects' JSON, written once (object-json.ts). */
  private readonly encoded = new ObjectJson();

  constructor(deps: ResourceHandlerDeps) {
    this.d = deps;
  }

  /** Serves the request; resolves to the HTTP status it answered with. */
  async serve(rq: ResourceRequest): Promise<number> {
    const { res, verb, subresource: sub, body: raw, user } = rq;
    if (verb === 'create' && rq.resource.plural === 'selfsubjectreviews') {
      // `kubectl auth whoami`: the request's own user, extras included.
      send(res, 201, selfSubjectReview(user));
      return 201;
    }
    if (verb === 'create' && sub === 'token') {
      if (!raw) throw badRequest('the request body is required');
      const ct = (rq.req.headers['content-type'] ?? 'application/json').toLowerCase();
      // kubectl's typed client sends it as protobuf.
      const body = ct.includes('protobuf') ? tokenRequestFromProtobuf(raw) : parseBody(raw, ct);
      const tr = this.d.access.tokenRequest(rq.namespace as string, rq.name as string, body);
      send(res, 201, tr);
      return 201;
    }
    return this.serveVerb(
      rq,
      WRITES.includes(verb) ? requestAdmission(rq, this.d.store, this.d.access) : undefined,
    );
  }

  /** Reads or writes through the registry; a write carries the request's admission. */
  private async serveVerb(rq: ResourceRequest, admission: Admission | undefined): Promise<number> {
    const { req, res, resource: r, version, verb, namespace: ns, name } = rq;
    const { subresource: sub, query: q, body: raw } = rq;
    const { registry, store, now } = this.d;
    const accept = req.headers.accept;
    const table = wantsTable(accept);
    const include = (q.get('includeObject') ?? 'Metadata') as IncludeObject;
    const contentType = (req.headers['content-type'] ?? 'application/json').toLowerCase();
    const dryRun = q.getAll('dryRun').includes('All');
    const ua = req.headers['user-agent'] ?? '';
    const fieldManager = q.get('fieldManager') ?? (ua.split('/')[0] || 'unknown');
    const wopts: WriteOptions = {
      fieldManager,
      dryRun,
      force: truthy(q.get('force')),
      strict: q.get('fieldValidation') === 'Strict',
      ...this.fieldCheck(rq),
      ...(admission ? { admission } : {}),
    };
    const body = (): Json => {
      if (!raw) throw badRequest('the request body is required');
      const ct = contentType.split(';')[0]?.trim() ?? '';
      if (verb !== 'patch' && !['application/json', 'application/yaml', '*/*', ''].includes(ct))
        throw unsupportedMediaType(ct);
      return wopts.fields ? wopts.fields.parse(raw, contentType) : parseBody(raw, contentType);
    };
    const out = (obj: KObject): KObject => atVersion(r, version, obj);
    if (sub === 'binding') {
      // pods/binding: bind the pod to the Binding's node (a main-resource write).
      const node = bindingTarget(body(), name as string);
      const pod = registry.get(r, ns, name as string);
      registry.update(r, ns, name as string, boundPod(pod, node), wopts);
      send(res, 201, statusBody(201, '', ''));
      return 201;
    }
    switch (verb) {
      case 'get': {
        const obj = out(registry.get(r, ns, name as string));
        send(
          res,
          200,
          table ? toTable(r, [obj], String(obj.metadata.resourceVersion), include, now()) : obj,
        );
        return 200;
      }
      case 'list': {
        const limit = parsePositiveInt(q, 'limit');
        const selector = selectorFrom(q);
        const byName = nameTermOf(q.get('fieldSelector'));
        const listed = registry.list(r, ns, {
          selector,
          ...(byName !== undefined ? { name: byName } : {}),
          ...(limit ? { limit } : {}),
          ...(q.get('continue') ? { continueToken: q.get('continue') as string } : {}),
        });
        const meta: JsonObject = { resourceVersion: String(listed.rv) };
        if (listed.continue) {
          meta.continue = listed.continue;
          meta.remainingItemCount = listed.remaining ?? 0;
        }
        const items = listed.items.map(out);
        send(
          res,
          200,
          table
            ? toTable(
                r,
                items,
                String(listed.rv),
                include,
                now(),
                listed.continue ? { continue: listed.continue } : {},
              )
            : {
                kind: r.listKind,
                apiVersion: apiVersionOf(r.group, version),
                metadata: meta,
                items,
              },
        );
        return 200;
      }
      case 'watch':
        return this.serveWatch(rq, table, include);
      case 'create': {
        const obj = registry.create(r, ns, body(), wopts, sub);
        send(res, 201, this.encoded.of(out(obj)));
        return 201;
      }
      case 'update': {
        const obj = registry.update(r, ns, name as string, body(), wopts, sub);
        send(res, 200, this.encoded.of(out(obj)));
        return 200;
      }
      case 'patch': {
        const ct = patchTypeOf(contentType);
        if (!raw) throw badRequest('the request body is required');
        const patch = wopts.fields ? wopts.fields.parse(raw, ct) : parseBody(raw, ct);
        const obj = registry.patch(r, ns, name as string, ct, patch, wopts, sub);
        send(res, 200, this.encoded.of(out(obj)));
        return 200;
      }
      case 'delete': {
        // DeleteOptions from the body, else from the query (delete.go).
        const opts =
          raw && raw.length > 0 ? parseBody(raw, contentType) : deleteOptionsFromQuery(q);
        const obj = registry.delete(r, ns, name as string, opts, dryRun, admission);
        // 202 when orphanDependents=false left the object in place (DeleteResource).
        const kept = store.get(resourceKey(r), r.namespaced ? ns : undefined, name as string);
        const code = acceptedDelete(opts, kept?.metadata.uid === obj.metadata.uid) ? 202 : 200;
        send(res, code, this.encoded.of(out(obj)));
        return code;
      }
      case 'deletecollection': {
        const opts =
          raw && raw.length > 0 ? parseBody(raw, contentType) : deleteOptionsFromQuery(q);
        const listed = registry.list(r, ns, { selector: selectorFrom(q) });
        const deleted = listed.items.map((o) =>
          out(
            registry.delete(
              r,
              o.metadata.namespace as string | undefined,
              String(o.metadata.name),
              opts,
              dryRun,
              admission,
            ),
          ),
        );
        send(res, 200, {
          kind: r.listKind,
          apiVersion: apiVersionOf(r.group, version),
          metadata: { resourceVersion: String(store.currentRv()) },
          items: deleted,
        });
        return 200;
      }
    }
    throw methodNotAllowed(`verb ${verb} is not supported`);
  }

  /**
   * A write's field validation (validation/fields.ts): the fieldValidation
   * directive, its warnings sent as Warning headers as kube-apiserver sends them.
   */
  private fieldCheck(rq: ResourceRequest): { fields?: FieldCheck } {
    const { verb, req, res, query: q } = rq;
    if (verb !== 'create' && verb !== 'update' && verb !== 'patch') return {};
    const apply = verb === 'patch' && /apply-patch/.test(req.headers['content-type'] ?? '');
    const v: WriteVerb = apply ? 'apply' : verb;
    const warn = (text: string): void => {
      res.appendHeader('Warning', `299 - ${JSON.stringify(text)}`);
    };
    return { fields: new FieldCheck(directiveOf(q, v), v, warn) };
  }

  private serveWatch(rq: ResourceRequest, table: boolean, include: IncludeObject): number {
    const { req, res, resource: r, version, namespace: ns, name, query: q } = rq;
    const { store, now, watches } = this.d;
    const rvParam = q.get('resourceVersion') ?? '';
    let fromRv: number | undefined;
    if (rvParam !== '' && rvParam !== '0') {
      fromRv = Number(rvParam);
      if (!Number.isInteger(fromRv) || fromRv < 0)
        throw badRequest(`invalid resourceVersion: ${rvParam}`);
    }
    const timeoutS = parsePositiveInt(q, 'timeoutSeconds');
    const selector = selectorFrom(q, name);
    const indexKey = indexKeyOf(fieldsFrom(q, name));
    const encode = (type: string, obj: KObject): string => {
      const o = atVersion(r, version, obj);
      if (table && type !== 'BOOKMARK')
        return JSON.stringify({
          type,
          object: toTable(r, [o], String(o.metadata.resourceVersion), include, now()),
        });
      if (o !== obj) return JSON.stringify({ type, object: o });
      return this.encoded.event(type, obj);
    };
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache',
    });
    res.flushHeaders();
    // A resume from compacted history ends inside startWatch, before `w` exists.
    const live: { watch?: ActiveWatch; ended?: boolean } = {};
    const w = startWatch(
      store,
      {
        resource: r,
        ...(ns ? { namespace: ns } : {}),
        selector,
        ...(fromRv !== undefined ? { fromRv } : {}),
        sendInitialEvents: truthy(q.get('sendInitialEvents')),
        bookmarks: truthy(q.get('allowWatchBookmarks')),
        bookmarkIntervalMs: this.d.bookmarkMs,
        ...(timeoutS !== undefined ? { timeoutMs: timeoutS * 1000 } : {}),
        encode,
        index: this.d.watchIndex,
        ...(indexKey ? { indexKey } : {}),
      },
      { send: (line) => res.write(line + '\n'), end: () => res.end() },
      () => {
        live.ended = true;
        if (live.watch) watches.delete(live.watch);
      },
    );
    live.watch = w;
    if (!live.ended) watches.add(w);
    req.on('close', () => w.stop());
    res.on('close', () => w.stop());
    // A resume from compacted history got 410 Gone in its stream: counted as such.
    const sendInitial = truthy(q.get('sendInitialEvents'));
    return fromRv !== undefined && !sendInitial && fromRv < store.oldestWatchableRv() ? 410 : 200;
  }
}
