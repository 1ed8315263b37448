// The local Kubernetes API server: node:http, one request at a time through
// route → resource → verb → registry, JSON in and out, metav1.Status errors.
// HTTP on 127.0.0.1, or HTTPS with a CA made at start (tls). Every request
// is authenticated and authorized, every write admitted (access.ts). See the
// other files of this folder for each concern (store, watch, patches, apply,
// selectors, discovery, tables).
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../log/logger.ts';
import { AccessControl, requestAttributes } from './access.ts';
import type { AuthorizationMode } from './auth/authorize.ts';
import type { FeatureGates } from './auth/feature-gates.ts';
import { openServerRisk } from './auth/open-risk.ts';
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from './auth/bootstrap.ts';
import type { AdmissionDenial, AuthorizationRecord } from './auth/decisions.ts';
import { RequestCounter, type RequestCounters } from './counters.ts';
import { readCrdDir } from './crd-files.ts';
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
import { FaultTable, type FaultInjector, type FaultSpec } from './faults.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { openApiV2Protobuf } from './openapi-v2.ts';
import type { KObject } from './objects.ts';
import { Registry } from './registry.ts';
import {
  BUILTIN_RESOURCES,
  ResourceCatalog,
  resourceFromCrd,
  resourceKey,
  type ResourceInfo,
} from './resources.ts';
import { parseApiPath } from './router.ts';
import { readBody, send, sendError, truthy, unanswered } from './http.ts';
import { ResourceHandlers, type ResourceRequest } from './resource-handlers.ts';

export { parseBody } from './http.ts';
import { ObjectStore, type StoreEvent } from './store.ts';
import { makeTlsMaterial, type TlsMaterial } from './tls.ts';
import type { ActiveWatch } from './watch.ts';
import { WatchIndex } from './watch-index.ts';

export interface ApiServerOptions {
  /** Port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number;
  /** Directory whose YAML files' CustomResourceDefinitions are applied at start. */
  crdsDir?: string;
  /** Where to write the kubeconfig; a file in the temp directory by default. */
  kubeconfigPath?: string;
  /** Events kept for watch resume; older resourceVersions get 410 Gone. */
  historyLimit?: number;
  logger?: Logger;
  /** Largest accepted request body, bytes (3 MiB as upstream). */
  maxBodyBytes?: number;
  /** Interval of watch bookmarks when asked for (allowWatchBookmarks=true). */
  bookmarkIntervalMs?: number;
  now?: () => Date;
  /**
   * Pending-connection queue of the listener (Node's default 511 when absent).
   * Thousands of in-process clients reconnecting while the event loop is busy
   * overflow the default: connects then hang in SYN-SENT until they time out.
   */
  listenBacklog?: number;
  /** Serve HTTPS with a CA and serving certificate made at start (or these). */
  tls?: boolean | TlsMaterial;
  /** kube-apiserver's --token-auth-file: CSV token,user,uid,"group1,group2". */
  tokenAuthFile?: string;
  /** AlwaysAllow (default) or RBAC; members of system:masters may always do anything. */
  authorizationMode?: AuthorizationMode;
  /** Requests without credentials are system:anonymous (default: true unless tokenAuthFile). */
  anonymous?: boolean;
  /** kube-apiserver's --feature-gates (ServiceAccountTokenNodeBinding, on by default as in 1.31+). */
  featureGates?: FeatureGates;
}

export interface ApiServer {
  url: string;
  port: number;
  kubeconfigPath: string;
  /** PEM of the CA the HTTPS server's certificate chains to (absent over plain HTTP). */
  caPem?: string;
  /** Bearer token of the written kubeconfig's user (kubernetes-admin, system:masters). */
  adminToken: string;
  counters(): RequestCounters;
  faults: FaultInjector;
  /**
   * Every authorization decision on a user outside system:masters, counted by
   * request attributes; the writes admission denied; the requests refused as
   * unauthenticated (401).
   */
  authorizations(): {
    decisions: AuthorizationRecord[];
    admissionDenials: AdmissionDenial[];
    unauthenticated: number;
  };
  /** TCP connections accepted so far, and per user the connections they sent requests on. */
  connections(): { accepted: number; byUser: Record<string, number> };
  /** Direct access to stored objects, for tests and in-process reports (read-only). */
  objects(group: string, plural: string, namespace?: string): KObject[];
  close(): Promise<void>;
}

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

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

export async function startApiServer(opts: ApiServerOptions = {}): Promise<ApiServer> {
  const logger = (opts.logger ?? silentLogger()).child({ component: 'apiserver' });
  const now = opts.now ?? (() => new Date());
  const maxBody = opts.maxBodyBytes ?? 3 * 1024 * 1024;
  const bookmarkMs = opts.bookmarkIntervalMs ?? 10_000;
  const store = new ObjectStore(opts.historyLimit ?? 10_000);
  const catalog = new ResourceCatalog(BUILTIN_RESOURCES);
  const counters = new RequestCounter();
  const faults = new FaultTable();
  /** Requests answered already and applied later (a fault's holdMs); dropped at close. */
  const held = new Set<NodeJS.Timeout>();
  const watches = new Set<ActiveWatch>();
  const watchIndex = new WatchIndex(store);
  const access = new AccessControl(store, {
    ...(opts.tokenAuthFile !== undefined ? { tokenAuthFile: opts.tokenAuthFile } : {}),
    ...(opts.authorizationMode !== undefined ? { authorizationMode: opts.authorizationMode } : {}),
    ...(opts.anonymous !== undefined ? { anonymous: opts.anonymous } : {}),
    ...(opts.featureGates !== undefined ? { featureGates: opts.featureGates } : {}),
    now,
    logger,
  });
  const tls: TlsMaterial | undefined =
    opts.tls === true ? await makeTlsMaterial({ now: now() }) : opts.tls || undefined;

  const onCrd = (ev: StoreEvent): void => {
    const crd = ev.object;
    let info: ResourceInfo;
    try {
      info = resourceFromCrd(crd);
    } catch {
      return;
    }
    if (ev.type === 'DELETED') {
      catalog.remove(info.group, info.plural);
      registry.deleteAll(resourceKey(info), undefined);
      for (const w of [...watches]) if (resourceKey(w.resource) === resourceKey(info)) w.stop();
    } else catalog.add(info);
  };
  const registry = new Registry(store, now, onCrd);
  registry.onNamespaceDeleted = (ns) => {
    for (const r of catalog.all()) if (r.namespaced) registry.deleteAll(resourceKey(r), ns);
  };
  const nsRes = catalog.find('', 'v1', 'namespaces') as ResourceInfo;
  for (const ns of DEFAULT_NAMESPACES)
    registry.create(
      nsRes,
      undefined,
      { metadata: { name: ns } },
      { fieldManager: 'apiserver', dryRun: false },
    );
  for (const [plural, objects] of [
    ['clusterroles', bootstrapClusterRoles()],
    ['clusterrolebindings', bootstrapClusterRoleBindings()],
  ] as const) {
    const r = catalog.find('rbac.authorization.k8s.io', 'v1', plural) as ResourceInfo;
    for (const o of objects)
      registry.create(r, undefined, o, { fieldManager: 'apiserver', dryRun: false });
  }
  if (opts.crdsDir) {
    const crdRes = catalog.find(
      'apiextensions.k8s.io',
      'v1',
      'customresourcedefinitions',
    ) as ResourceInfo;
    for (const crd of readCrdDir(opts.crdsDir)) {
      registry.create(crdRes, undefined, crd, { fieldManager: 'apiserver', dryRun: false });
      logger.info('custom resource definition applied', { crd: crd.metadata.name });
    }
  }

  let address = '';
  const handlers = new ResourceHandlers({
    registry,
    store,
    access,
    now,
    watches,
    watchIndex,
    bookmarkMs,
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    const q = url.searchParams;
    // Bodies first, so an oversized one is refused before anything else.
    let raw: Buffer | undefined;
    if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE')
      raw = await readBody(req, maxBody);

    const route = parseApiPath(path, (g, v, p) => {
      const r = catalog.find(g, v, p);
      return r !== undefined && r.namespaced;
    });
    const watch = route.kind === 'resource' && (route.legacyWatch || truthy(q.get('watch')));
    const verb =
      route.kind === 'resource' ? verbOf(method, route.name, watch, route.subresource) : undefined;
    const user = access.authenticate(req.headers.authorization);
    noteConnection(req, user.username);
    access.authorize(requestAttributes(user, method, path, route, verb, q));

    switch (path) {
      case '/version':
        return send(res, 200, versionInfo());
      case '/healthz':
      case '/livez':
      case '/readyz':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        return;
      case '/metrics': {
        const text = await counters.metrics();
        res.writeHead(200, { 'Content-Type': counters.registry.contentType });
        res.end(text);
        return;
      }
      case '/openapi/v2': {
        const doc = openApiV2Protobuf(catalog);
        res.writeHead(200, {
          'Content-Type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf',
          'Content-Length': doc.length,
        });
        res.end(doc);
        return;
      }
      case '/openapi/v3':
        return send(res, 200, openApiIndex(catalog, String(store.currentRv())));
    }
    if (path.startsWith('/openapi/v3/')) {
      const rest = path.slice('/openapi/v3/'.length).split('/');
      const doc =
        rest[0] === 'api'
          ? openApiGroupVersion(catalog, '', rest[1] ?? '')
          : openApiGroupVersion(catalog, rest[1] ?? '', rest[2] ?? '');
      if (doc) return send(res, 200, doc);
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }

    if (route.kind === 'discovery-root') {
      return send(res, 200, route.which === 'api' ? apiVersions(address) : apiGroupList(catalog));
    }
    if (route.kind === 'discovery-group') {
      const doc = apiGroup(catalog, route.group);
      if (doc) return send(res, 200, doc);
    }
    if (route.kind === 'discovery-version') {
      const doc = apiResourceList(catalog, route.group, route.version);
      if (doc) return send(res, 200, doc);
    }
    if (route.kind !== 'resource')
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');

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
    const rq: ResourceRequest = {
      req,
      res,
      resource: resInfo,
      version: route.version,
      verb,
      namespace: resInfo.namespaced ? route.namespace : undefined,
      name: route.name,
      subresource: route.subresource,
      query: q,
      body: raw,
      user,
    };
    try {
      const fault = faults.take(verb, route.plural, sub);
      if (fault && !fault.afterCommit) throw fault.error;
      if (fault?.holdMs !== undefined) {
        // Answered now, applied later (post-timeout activity: faults.ts).
        const timer = setTimeout(() => {
          held.delete(timer);
          handlers.serve({ ...rq, res: unanswered(res) }).then(
            (code) => logger.debug('held request applied', { verb, resource: route.plural, code }),
            (err: unknown) =>
              logger.debug('held request refused', {
                verb,
                resource: route.plural,
                error: String(err),
              }),
          );
        }, fault.holdMs);
        held.add(timer);
        throw fault.error;
      }
      const code = await handlers.serve(fault ? { ...rq, res: unanswered(res) } : rq);
      if (fault) throw fault.error; // applied; the answer is lost
      counters.record(verb, route.plural, sub, code);
    } catch (err) {
      counters.record(verb, route.plural, sub, err instanceof ApiError ? err.code : 500);
      throw err;
    }
  }

  // Connections per user: a socket counts once for each user who sent requests on it.
  let accepted = 0;
  const connectionsByUser = new Map<string, number>();
  const usersOfSocket = new WeakMap<object, Set<string>>();
  const noteConnection = (req: IncomingMessage, username: string): void => {
    let users = usersOfSocket.get(req.socket);
    if (!users) usersOfSocket.set(req.socket, (users = new Set()));
    if (users.has(username)) return;
    users.add(username);
    connectionsByUser.set(username, (connectionsByUser.get(username) ?? 0) + 1);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof ApiError) sendError(res, err);
      else {
        logger.error('request failed', {
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
  };
  const server: Server = tls
    ? (createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, onRequest) as unknown as Server)
    : createServer(onRequest);
  server.keepAliveTimeout = 30_000;
  server.on('connection', () => (accepted += 1));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.port ?? 0, host: '127.0.0.1', backlog: opts.listenBacklog }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  address = `127.0.0.1:${port}`;
  const url = `${tls ? 'https' : 'http'}://${address}`;
  // Without a kubeconfigPath the kubeconfig goes into a directory of its own
  // in the temp dir, which close() removes: nothing is left behind.
  const ownKubeconfigDir =
    opts.kubeconfigPath === undefined
      ? join(tmpdir(), `pool-monitor-apiserver-${process.pid}-${port}`)
      : undefined;
  const kubeconfigPath = opts.kubeconfigPath ?? join(ownKubeconfigDir ?? '', 'kubeconfig');
  writeKubeconfig(kubeconfigPath, url, {
    token: access.adminToken,
    ...(tls ? { caPem: tls.caPem } : {}),
  });
  // The risk first: whoever waits for the "listening" line has read it.
  const risk = openServerRisk(access.mode, access.anonymous);
  if (risk !== undefined) logger.warn('api server is open', { url, risk });
  logger.info('api server listening', {
    url,
    kubeconfig: kubeconfigPath,
    authorizationMode: access.mode,
    anonymous: access.anonymous,
  });

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    kubeconfigPath,
    ...(tls ? { caPem: tls.caPem } : {}),
    adminToken: access.adminToken,
    counters: () => counters,
    connections: () => ({ accepted, byUser: Object.fromEntries(connectionsByUser) }),
    authorizations: () => ({
      decisions: access.decisions.entries(),
      admissionDenials: access.decisions.admissionDenials(),
      unauthenticated: access.unauthenticated,
    }),
    objects: (group, plural, namespace) => store.list(resourceKey({ group, plural }), namespace),
    faults: {
      inject: (spec: FaultSpec) => faults.add(spec),
      setPolicy: (policy) => {
        faults.policy = policy;
      },
      clear: () => faults.clear(),
      dropWatches: (resource?: string) => {
        let n = 0;
        for (const w of [...watches])
          if (!resource || w.resource.plural === resource) {
            w.stop();
            n++;
          }
        return n;
      },
      compactHistory: () => store.compact(),
    },
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        for (const t of held) clearTimeout(t);
        held.clear();
        for (const w of [...watches]) w.stop();
        server.close(() => resolve());
        server.closeAllConnections();
        if (ownKubeconfigDir !== undefined)
          rmSync(ownKubeconfigDir, { recursive: true, force: true });
        logger.info('api server stopped', { url });
      });
      return closed;
    },
  };
}
