// The local Kubernetes API server: node:http, one request at a time through
// route → resource → verb → registry, JSON in and out, metav1.Status errors.
// HTTP on 127.0.0.1, or HTTPS with a CA made at start (tls). Every request
// is authenticated and authorized, every write admitted (access.ts). This
// file builds the parts and listens; the request path is requests.ts, the
// resource verbs resource-handlers.ts, and the other files of this folder
// hold each concern (store, watch, patches, apply, selectors, discovery,
// tables).
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../../src/log/logger.ts';
import { AccessControl } from './access.ts';
import type { AuthorizationMode } from './auth/authorize.ts';
import type { FeatureGates } from './auth/feature-gates.ts';
import { openServerRisk } from './auth/open-risk.ts';
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from './auth/bootstrap.ts';
import type { AdmissionDenial, AuthorizationRecord } from './auth/decisions.ts';
import { RequestCounter, type RequestCounters } from './counters.ts';
import { readCrdDir } from './crd-files.ts';
import { FaultTable, type FaultInjector, type FaultSpec } from './faults.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import type { KObject } from '../../src/kube/json-object.ts';
import { Registry } from './registry.ts';
import { startControllers } from './controllers.ts';
import {
  BUILTIN_RESOURCES,
  ResourceCatalog,
  resourceFromCrd,
  resourceKey,
  type ResourceInfo,
} from './resources.ts';
import { ResourceHandlers } from './resource-handlers.ts';
import { answer, ConnectionLog, type ServerParts } from './requests.ts';
import { ObjectStore, type StoreEvent } from './store.ts';
import { makeTlsMaterial, type TlsMaterial } from './tls.ts';
import { DEFAULT_BOOKMARK_INTERVAL_MS, type ActiveWatch } from './watch.ts';
import { WatchIndex } from './watch-index.ts';

export { parseBody } from './http.ts';

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
  /**
   * Period of watch bookmarks when asked for (allowWatchBookmarks=true):
   * kube-apiserver's minute by default (watch.ts has its schedule); 0 sends
   * none. Shorter only for tests that need it.
   */
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
  /**
   * kube-controller-manager's owner-reference garbage collector (default
   * on): dependents of deleted owners are deleted, and DELETE's
   * propagationPolicy (Background, Foreground, Orphan) is honoured.
   */
  garbageCollector?: boolean;
  /** The pod GC's deletion of pods bound to missing Nodes (default on). */
  podGc?: boolean;
  /** How long a Node must be missing before the pod GC deletes its pods, ms (40 s, as upstream). */
  podGcOrphanMs?: number;
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

export async function startApiServer(opts: ApiServerOptions = {}): Promise<ApiServer> {
  const logger = (opts.logger ?? silentLogger()).child({ component: 'apiserver' });
  const now = opts.now ?? (() => new Date());
  const maxBody = opts.maxBodyBytes ?? 3 * 1024 * 1024;
  const bookmarkMs = opts.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS;
  if (!Number.isFinite(bookmarkMs) || bookmarkMs < 0)
    throw new Error(`bookmarkIntervalMs must be a number of ms >= 0, got ${bookmarkMs}`);
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
  seedObjects(registry, catalog, opts.crdsDir, logger);
  const controllers = startControllers(opts, { store, registry, catalog, logger, now });

  let address = '';
  const connections = new ConnectionLog();
  const parts: ServerParts = {
    logger,
    maxBody,
    store,
    catalog,
    counters,
    faults,
    held,
    access,
    handlers: new ResourceHandlers({
      registry,
      store,
      access,
      now,
      watches,
      watchIndex,
      bookmarkMs,
    }),
    connections,
    address: () => address,
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => answer(parts, req, res);
  const server: Server = tls
    ? (createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, onRequest) as unknown as Server)
    : createServer(onRequest);
  server.keepAliveTimeout = 30_000;
  server.on('connection', () => (connections.accepted += 1));
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
    connections: () => connections.counts(),
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
        controllers.stop();
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

/** What a fresh cluster holds: the default namespaces, the bootstrap RBAC, and the CRDs of crdsDir. */
function seedObjects(
  registry: Registry,
  catalog: ResourceCatalog,
  crdsDir: string | undefined,
  logger: Logger,
): void {
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
  if (crdsDir) {
    const crdRes = catalog.find(
      'apiextensions.k8s.io',
      'v1',
      'customresourcedefinitions',
    ) as ResourceInfo;
    for (const crd of readCrdDir(crdsDir)) {
      registry.create(crdRes, undefined, crd, { fieldManager: 'apiserver', dryRun: false });
      logger.info('custom resource definition applied', { crd: crd.metadata.name });
    }
  }
}
