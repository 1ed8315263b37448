// The workload driver's three pod calls (PodApi: create, set the phase
// through the status subresource, delete with no grace period), the
// simulated kubelets' two (PodStatusCalls: patch and read a pod's status)
// and their pod list and watch (PodListWatch, for kubelet/pod-watch.ts)
// over plain node:http(s) with JSON bodies, for runs that create pods by the
// ten thousand. client-node's generated client serialises every V1Pod through
// its ObjectSerializer and every request through fetch: measured against
// the embedded API server, 3,000 creates cost 1.1-1.3 ms of CPU per pod
// with it and 0.6 ms with this (both ends, one process). Same requests,
// same API server, same admission: only the client is cheaper. A failed
// call throws an Error with the HTTP status as `statusCode` (what the
// driver's 409/404 handling reads, src/kube/errors.ts) and the Status
// message. Token or anonymous access only, as the embedded admin has.
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { PodApi } from '../workload/driver.ts';
import type { PodStatusCalls } from '../kubelet/kube.ts';
import type { PodListWatch, PodQuery, PodStream } from '../kubelet/pod-watch.ts';
import { watchTimeoutSeconds } from '../../src/kube/watch.ts';

/** How long one call may take before it fails (and the driver retries it). */
const CALL_TIMEOUT_MS = 30_000;

export interface HttpPodApi extends PodApi, PodStatusCalls, PodListWatch {
  /** Closes the kept-alive connections. */
  close(): void;
}

/** JSON calls and line-by-line watches to the kubeconfig's server, with its token. */
export interface HttpJsonCalls {
  /** The answer's text on a 2xx; else rejects with `statusCode` and the Status message. */
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<string>;
  /** A watch's JSON lines as they arrive; `onEnd` once: an error, or nothing when the server ends it. */
  watch(path: string, onLine: (line: string) => void, onEnd: (error?: Error) => void): PodStream;
  /** Closes the kept-alive connections. */
  close(): void;
}

export function httpJsonCalls(kc: KubeConfig, maxSockets = 64): HttpJsonCalls {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('httpJsonCalls: the kubeconfig has no current cluster');
  const user = kc.getCurrentUser();
  if (user?.certData || user?.certFile || user?.exec || user?.authProvider)
    throw new Error('httpJsonCalls: only token (or anonymous) access is supported');
  const server = new URL(cluster.server);
  const tls = server.protocol === 'https:';
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64')
    : cluster.caFile
      ? readFileSync(cluster.caFile)
      : undefined;
  const agent = tls
    ? new https.Agent({
        keepAlive: true,
        maxSockets,
        ...(ca ? { ca } : {}),
        rejectUnauthorized: cluster.skipTLSVerify !== true,
      })
    : new http.Agent({ keepAlive: true, maxSockets });
  // Watches hold their connection for minutes: a pool of their own, uncapped,
  // so they never queue the calls above behind them.
  const watchAgent = tls
    ? new https.Agent({
        keepAlive: true,
        ...(ca ? { ca } : {}),
        rejectUnauthorized: cluster.skipTLSVerify !== true,
      })
    : new http.Agent({ keepAlive: true });
  const auth: Record<string, string> = user?.token ? { authorization: `Bearer ${user.token}` } : {};

  const call = (method: string, path: string, body?: unknown, type = 'application/json') =>
    new Promise<string>((resolve, reject) => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const req = (tls ? https : http).request(
        {
          host: server.hostname,
          port: server.port,
          method,
          path,
          agent,
          headers: {
            accept: 'application/json',
            ...auth,
            ...(text !== undefined
              ? { 'content-type': type, 'content-length': Buffer.byteLength(text) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const answer = Buffer.concat(chunks).toString('utf8');
            if (status >= 200 && status < 300) return resolve(answer);
            reject(callError(method, path, status, answer));
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(CALL_TIMEOUT_MS, () =>
        req.destroy(new Error(`${method} ${path}: no answer in ${CALL_TIMEOUT_MS} ms`)),
      );
      req.on('error', reject);
      req.end(text);
    });

  /** A watch's JSON lines as they arrive; `onEnd` once: an error, or nothing when the server ends it. */
  const watch = (
    path: string,
    onLine: (line: string) => void,
    onEnd: (error?: Error) => void,
  ): PodStream => {
    let ended = false;
    const end = (error?: Error): void => {
      if (ended) return;
      ended = true;
      onEnd(error);
    };
    const req = (tls ? https : http).request(
      {
        host: server.hostname,
        port: server.port,
        method: 'GET',
        path,
        agent: watchAgent,
        headers: { accept: 'application/json', ...auth },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        if (status < 200 || status >= 300) {
          let body = '';
          res.on('data', (c: string) => (body += c));
          res.on('end', () => end(callError('GET', path, status, body)));
          return;
        }
        let rest = '';
        res.on('data', (chunk: string) => {
          let text = rest + chunk;
          let nl = text.indexOf('\n');
          while (nl >= 0) {
            const line = text.slice(0, nl);
            if (line.trim() !== '' && !ended) onLine(line);
            text = text.slice(nl + 1);
            nl = text.indexOf('\n');
          }
          rest = text;
        });
        res.on('end', () => {
          if (rest.trim() !== '' && !ended) onLine(rest);
          end();
        });
        res.on('error', (e) => end(e));
        // Closed without an end: the connection was cut.
        res.on('close', () => end(new Error(`GET ${path}: the connection closed mid-watch`)));
      },
    );
    req.on('error', (e) => end(e));
    req.end();
    return {
      abort: () => {
        end(new Error('watch aborted'));
        req.destroy();
      },
    };
  };

  return {
    call,
    watch,
    close: () => {
      agent.destroy();
      watchAgent.destroy();
    },
  };
}

export function httpPodApi(kc: KubeConfig, maxSockets = 64): HttpPodApi {
  const { call, watch, close } = httpJsonCalls(kc, maxSockets);
  const pods = (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  const podQuery = (q: PodQuery, extra: Record<string, string>): string => {
    const params = new URLSearchParams({ fieldSelector: q.fieldSelector, ...extra });
    if (q.labelSelector) params.set('labelSelector', q.labelSelector);
    return `${q.namespace ? pods(q.namespace) : '/api/v1/pods'}?${params.toString()}`;
  };

  const status = (namespace: string, name: string) =>
    `${pods(namespace)}/${encodeURIComponent(name)}/status`;
  const mergePatch = (path: string, body: object) =>
    call('PATCH', path, body, 'application/merge-patch+json').then(() => undefined);
  return {
    createPod: (pod: V1Pod) =>
      call('POST', pods(pod.metadata?.namespace ?? 'default'), pod).then(() => undefined),
    setPodPhase: (namespace, name, phase) =>
      mergePatch(status(namespace, name), { status: { phase } }),
    deletePod: (namespace, name) =>
      call('DELETE', `${pods(namespace)}/${encodeURIComponent(name)}?gracePeriodSeconds=0`).then(
        () => undefined,
      ),
    patchPodStatus: (namespace, name, body) => mergePatch(status(namespace, name), body),
    readPodStatus: async (namespace, name) =>
      JSON.parse(await call('GET', status(namespace, name))) as V1Pod,
    listPods: async (q) => {
      const list = JSON.parse(await call('GET', podQuery(q, {}))) as {
        items?: V1Pod[];
        metadata?: { resourceVersion?: string };
      };
      return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    watchPods: (q, resourceVersion, onLine, onEnd) =>
      watch(
        // The server ends it after 5 to 10 minutes, as client-go's reflector
        // asks (watchTimeoutSeconds): a connection that died silently is not
        // waited on for ever. No inactivity limit of its own besides: the
        // bookmarks come a minute apart (docs/decisions/0031).
        podQuery(q, {
          watch: 'true',
          resourceVersion,
          allowWatchBookmarks: 'true',
          timeoutSeconds: String(watchTimeoutSeconds()),
        }),
        onLine,
        onEnd,
      ),
    close,
  };
}

/** The error of a refused call: its status as `statusCode`, the Status message when there is one. */
function callError(method: string, path: string, status: number, body: string): Error {
  let message = body.slice(0, 200);
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message;
  } catch {
    // not JSON: the body's start says it
  }
  return Object.assign(new Error(`${method} ${path}: HTTP ${status}: ${message}`), {
    statusCode: status,
  });
}
