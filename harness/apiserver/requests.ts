// The local API server's request path (server.ts builds the parts and
// listens): read the body, route, authenticate and authorize, then serve -
// version, probes, metrics, OpenAPI and discovery here, resources through
// the fault table (faults.ts) to the resource handlers (resource-handlers.ts),
// every resource answer counted.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { requestAttributes, type AccessControl } from './access.ts';
import type { UserInfo } from './auth/user.ts';
import type { RequestCounter } from './counters.ts';
import {
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  openApiGroupVersion,
  openApiIndex,
  versionInfo,
} from './discovery.ts';
import { ApiError, methodNotAllowed, statusBody } from './errors.ts';
import type { FaultTable } from './faults.ts';
import { readBody, send, sendError, truthy, unanswered } from './http.ts';
import type { Logger } from '../../src/log/logger.ts';
import { openApiV2Protobuf } from './openapi-v2.ts';
import type { ResourceHandlers, ResourceRequest } from './resource-handlers.ts';
import type { ResourceCatalog, ResourceInfo } from './resources.ts';
import { parseApiPath, type Route as ApiRoute } from './router.ts';
import type { ObjectStore } from './store.ts';

/** What serving a request needs of the server: built once by startApiServer. */
export interface ServerParts {
  logger: Logger;
  maxBody: number;
  store: ObjectStore;
  catalog: ResourceCatalog;
  counters: RequestCounter;
  faults: FaultTable;
  /** Requests answered already and applied later (a fault's holdMs); dropped at close. */
  held: Set<NodeJS.Timeout>;
  access: AccessControl;
  handlers: ResourceHandlers;
  connections: ConnectionLog;
  /** host:port once listening (discovery's serverAddressByClientCIDRs). */
  address: () => string;
}

/** Connections accepted, and per user: a socket counts once for each user who sent requests on it. */
export class ConnectionLog {
  accepted = 0;
  private readonly byUser = new Map<string, number>();
  private readonly usersOfSocket = new WeakMap<object, Set<string>>();

  note(req: IncomingMessage, username: string): void {
    let users = this.usersOfSocket.get(req.socket);
    if (!users) this.usersOfSocket.set(req.socket, (users = new Set()));
    if (users.has(username)) return;
    users.add(username);
    this.byUser.set(username, (this.byUser.get(username) ?? 0) + 1);
  }

  counts(): { accepted: number; byUser: Record<string, number> } {
    return { accepted: this.accepted, byUser: Object.fromEntries(this.byUser) };
  }
}

function verbOf(
  method: string,
  name: string | undefined,
  watch: boolean,
  subresource?: string,
): string | undefined {
  switch (method) {
    case 'GET':
      return name ? (watch ? 'watch' : 'get') : watch ? 'watch' : 'list';
    case 'POST':
      return name ? (subresource ? 'create' : undefined) : 'create';
    case 'PUT':
      return name ? 'update' : undefined;
    case 'PATCH':
      return name ? 'patch' : undefined;
    case 'DELETE':
      return name ? 'delete' : 'deletecollection';
    default:
      return undefined;
  }
}

/** POST pods/NAME/binding, the scheduler's subresource. */
function isBinding(
  r: ResourceInfo | undefined,
  sub: string | undefined,
  name: string | undefined,
  method: string,
): boolean {
  return sub === 'binding' && r?.group === '' && r.plural === 'pods' && !!name && method === 'POST';
}

/** Answers one request; a failure becomes its metav1.Status (a 500 when unexpected). */
export function answer(parts: ServerParts, req: IncomingMessage, res: ServerResponse): void {
  handle(parts, req, res).catch((err: unknown) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof ApiError) sendError(res, err);
    else {
      parts.logger.error('request failed', {
        method: req.method,
        url: req.url,
        error: (err as Error).message,
      });
      send(
        res,
        500,
        statusBody(500, 'InternalError', `Internal error occurred: ${(err as Error).message}`),
      );
    }
  });
}

/** One request: read, route, authenticate, authorize, then serve. */
async function handle(
  parts: ServerParts,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { catalog, access } = parts;
  const url = new URL(req.url ?? '/', 'http://localhost');
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const method = req.method ?? 'GET';
  const q = url.searchParams;
  // Bodies first, so an oversized one is refused before anything else.
  let raw: Buffer | undefined;
  if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE')
    raw = await readBody(req, parts.maxBody);

  const route = parseApiPath(path, (g, v, p) => {
    const r = catalog.find(g, v, p);
    return r !== undefined && r.namespaced;
  });
  const watch = route.kind === 'resource' && (route.legacyWatch || truthy(q.get('watch')));
  const verb =
    route.kind === 'resource' ? verbOf(method, route.name, watch, route.subresource) : undefined;
  const user = access.authenticate(req.headers.authorization);
  parts.connections.note(req, user.username);
  access.authorize(requestAttributes(user, method, path, route, verb, q));

  if (await serveNonResource(parts, path, route, res)) return;
  if (route.kind !== 'resource')
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  const rq = resourceRequest(parts, { req, res, method, route, verb, query: q, body: raw, user });
  await serveCounted(parts, rq);
}

/** Version, probes, metrics, OpenAPI and discovery; false when the path is none of them. */
async function serveNonResource(
  parts: ServerParts,
  path: string,
  route: ApiRoute,
  res: ServerResponse,
): Promise<boolean> {
  const { catalog, store, counters } = parts;
  switch (path) {
    case '/version':
      send(res, 200, versionInfo());
      return true;
    case '/healthz':
    case '/livez':
    case '/readyz':
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return true;
    case '/metrics': {
      const text = await counters.metrics();
      res.writeHead(200, { 'Content-Type': counters.registry.contentType });
      res.end(text);
      return true;
    }
    case '/openapi/v2': {
      const doc = openApiV2Protobuf(catalog);
      res.writeHead(200, {
        'Content-Type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf',
        'Content-Length': doc.length,
      });
      res.end(doc);
      return true;
    }
    case '/openapi/v3':
      send(res, 200, openApiIndex(catalog, String(store.currentRv())));
      return true;
  }
  if (path.startsWith('/openapi/v3/')) {
    const rest = path.slice('/openapi/v3/'.length).split('/');
    const doc =
      rest[0] === 'api'
        ? openApiGroupVersion(catalog, '', rest[1] ?? '')
        : openApiGroupVersion(catalog, rest[1] ?? '', rest[2] ?? '');
    if (doc) {
      send(res, 200, doc);
      return true;
    }
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  }

  if (route.kind === 'discovery-root') {
    send(res, 200, route.which === 'api' ? apiVersions(parts.address()) : apiGroupList(catalog));
    return true;
  }
  if (route.kind === 'discovery-group') {
    const doc = apiGroup(catalog, route.group);
    if (doc) {
      send(res, 200, doc);
      return true;
    }
  }
  if (route.kind === 'discovery-version') {
    const doc = apiResourceList(catalog, route.group, route.version);
    if (doc) {
      send(res, 200, doc);
      return true;
    }
  }
  return false;
}

/** The resource request, once its resource, subresource and verb are known to exist. */
function resourceRequest(
  parts: ServerParts,
  input: {
    req: IncomingMessage;
    res: ServerResponse;
    method: string;
    route: ApiRoute & { kind: 'resource' };
    verb: string | undefined;
    query: URLSearchParams;
    body: Buffer | undefined;
    user: UserInfo;
  },
): ResourceRequest {
  const { catalog, counters } = parts;
  const { req, res, method, route, verb } = input;
  const resInfo = catalog.find(route.group, route.version, route.plural);
  const binding = isBinding(resInfo, route.subresource, route.name, method);
  const sub = route.subresource ?? '';
  if (!resInfo) {
    counters.record(verb ?? method.toLowerCase(), route.plural, sub, 404);
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  }
  if (
    route.subresource !== undefined &&
    !(route.subresource === 'status' && resInfo.statusSubresource) &&
    !(
      route.subresource === 'token' &&
      resInfo.group === '' &&
      resInfo.plural === 'serviceaccounts'
    ) &&
    !binding
  ) {
    counters.record(verb ?? method.toLowerCase(), route.plural, sub, 404);
    throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  }
  if (!verb) {
    counters.record(method.toLowerCase(), route.plural, sub, 405);
    throw methodNotAllowed(`the server does not allow this method on the requested resource`);
  }
  return {
    req,
    res,
    resource: resInfo,
    version: route.version,
    verb,
    namespace: resInfo.namespaced ? route.namespace : undefined,
    name: route.name,
    subresource: route.subresource,
    query: input.query,
    body: input.body,
    user: input.user,
  };
}

/** Serves a resource request through the fault table, counting its answer. */
async function serveCounted(parts: ServerParts, rq: ResourceRequest): Promise<void> {
  const { counters, faults, held, handlers, logger } = parts;
  const { res, verb } = rq;
  const plural = rq.resource.plural;
  const sub = rq.subresource ?? '';
  try {
    const fault = faults.take(verb, plural, sub);
    if (fault && !fault.afterCommit) throw fault.error;
    if (fault?.holdMs !== undefined) {
      // Answered now, applied later (post-timeout activity: faults.ts).
      const timer = setTimeout(() => {
        held.delete(timer);
        handlers.serve({ ...rq, res: unanswered(res) }).then(
          (code) => logger.debug('held request applied', { verb, resource: plural, code }),
          (err: unknown) =>
            logger.debug('held request refused', {
              verb,
              resource: plural,
              error: String(err),
            }),
        );
      }, fault.holdMs);
      held.add(timer);
      throw fault.error;
    }
    const code = await handlers.serve(fault ? { ...rq, res: unanswered(res) } : rq);
    if (fault) throw fault.error; // applied; the answer is lost
    counters.record(verb, plural, sub, code);
  } catch (err) {
    counters.record(verb, plural, sub, err instanceof ApiError ? err.code : 500);
    throw err;
  }
}
