// The sidecar's local HTTP API on plain node:http: probes, metrics, the pool
// debug view and the CNS-compatible IPAM endpoints the CNI calls.
//
// Requests and releases for one pod interface are serialised: each IPAM call
// is one synchronous store transaction on the one JS thread, taken in the
// order the bodies complete, so an ADD racing a DEL of the same interface
// ends as one of the two orders, never half of each (the storm property
// test); the pod follower's reclaims and adoptions are guarded transactions
// of the same store. Until the store follows the pods (`assignGate`), IP
// requests are answered ReturnCode 32 and the CNI retries.
//
// With a token (--node-api-token-file) the IPAM and pod-identity endpoints
// answer 401 to a request without it, before its body is read (auth.ts);
// listenUnix serves on a 0660 unix socket instead of TCP (unix-listen.ts).
//
// Every answer is JSON (metrics aside), every failure carries a CNS
// `{ReturnCode, Message}`, and a handler that throws is turned into a 500
// instead of taking the process down. Bad input is refused before anything
// touches the store. `close()` stops accepting, drops idle keep-alive
// sockets, lets in-flight requests finish, and only after a grace period cuts
// what is left.
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { IpRecord, NodeIpStore } from '../ipstore/types.ts';
import type { Logger } from '../log/logger.ts';
import { authorized, UNAUTHORIZED_MESSAGE, WWW_AUTHENTICATE } from './auth.ts';
import { DEFAULT_BODY_LIMIT, readJsonBody } from './body.ts';
import { PATHS, ReturnCode } from './cns.ts';
import type { ErrorBody } from './cns.ts';
import { listIpAddresses, notYet, releaseIpConfigs, requestIpConfigs } from './ipam.ts';
import type { IpamChange, Outcome } from './ipam.ts';
import { listenUnix, type UnixListenOptions } from './unix-listen.ts';
import { parseIpConfigsRequest, parseStateFilter } from './validate.ts';
import type { IpConfigsRequest, Parsed } from './validate.ts';

export interface HealthSource {
  /** False once the process cannot do its job (GET /healthz answers 503). */
  healthy(): boolean;
  /** True once the first valid NNC arrived and the store is loaded. */
  ready(): boolean;
  /** While not ready: what it waits for, said in /readyz's body. */
  notReadyReason?(): string | undefined;
}

export interface PoolStatusSource {
  /** The `/debug/pool` document (see buildDebugPool). */
  debugPool(): unknown;
}

/** The part of MetricsCollector the API uses. */
export interface NodeApiMetrics {
  readonly contentType: string;
  render(): Promise<string>;
  observeHttp(method: string, route: string, code: number, seconds: number): void;
}

export interface NodeApiDeps {
  store: NodeIpStore;
  health: HealthSource;
  pool: PoolStatusSource;
  metrics: NodeApiMetrics;
  logger: Logger;
  /** Told about every assignment and every release that freed an IP. Must not throw. */
  onChange?: (change: IpamChange) => void;
  /** A request refused for want of a free IP (ReturnCode 32 from the store). */
  onNoIp?: (request: { podNamespace: string; podName: string }) => void;
  /**
   * Why no IP may be handed out yet (the store does not follow the pods
   * yet), or undefined. While it says why, requests are answered with
   * ReturnCode 32 and the CNI retries; releases go on.
   */
  assignGate?: () => string | undefined;
  /**
   * A release that named no assignment the store knows: the sidecar may
   * release what it adopted for that pod (see PodFollower.releaseAdopted).
   * Returns the records released (as they were). Must not throw.
   */
  onUnmatchedRelease?: (request: IpConfigsRequest) => IpRecord[];
  /** Largest accepted request body in bytes; default 64 KiB. */
  maxBodyBytes?: number;
  /** How long close() waits for in-flight requests before cutting them; default 5 s. */
  closeGraceMs?: number;
  /** Monotonic clock in ms for request timing; default performance.now. */
  now?: () => number;
  /**
   * The node API token (--node-api-token-file), read anew on each call; when
   * it gives one, the IPAM and pod-identity endpoints need it (auth.ts).
   */
  token?: () => string | undefined;
}

export interface NodeApi {
  listen(host: string, port: number): Promise<{ host: string; port: number }>;
  /** Listens on a unix socket (0660, group `gid`), removed on close; resolves with its path. */
  listenUnix(path: string, opts: UnixListenOptions): Promise<string>;
  close(): Promise<void>;
  /** The underlying server, for tests and the embedded mode. */
  readonly server: Server;
}

interface Reply {
  status: number;
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

type Handler = (req: IncomingMessage) => Promise<Reply>;

const JSON_TYPE = 'application/json; charset=utf-8';

function errorReply(
  status: number,
  error: string,
  code: number = ReturnCode.InvalidRequest,
): Reply {
  const body: ErrorBody = { error, response: { ReturnCode: code, Message: error } };
  return { status, body };
}

export function createNodeApi(deps: NodeApiDeps): NodeApi {
  const log = deps.logger.child({ component: 'nodeapi' });
  const limit = deps.maxBodyBytes ?? DEFAULT_BODY_LIMIT;
  const now = deps.now ?? (() => performance.now());
  const graceMs = deps.closeGraceMs ?? 5000;

  const notify = (kind: IpamChange['kind'], outcome: Outcome<unknown>): void => {
    if (!outcome.changed || !deps.onChange) return;
    try {
      deps.onChange({ kind, record: outcome.changed });
    } catch (err) {
      log.error('onChange hook failed', { error: (err as Error).message });
    }
  };

  /** Reads and validates a JSON body; a refusal is a 4xx with ReturnCode 23. */
  const withBody =
    <T>(parse: (body: unknown) => Parsed<T>, run: (value: T) => Reply): Handler =>
    async (req) => {
      const body = await readJsonBody(req, limit);
      if (!body.ok) {
        const reply = errorReply(body.status, body.error);
        // The rest of an oversized body is never read: do not reuse the socket.
        if (body.status === 413) reply.headers = { connection: 'close' };
        return reply;
      }
      const parsed = parse(body.value);
      if (!parsed.ok) return errorReply(400, parsed.error);
      return run(parsed.value);
    };

  const ipamReply = (outcome: Outcome<unknown>): Reply => {
    if (outcome.error !== undefined) log.error('ipam request failed', { error: outcome.error });
    return { status: outcome.status, body: outcome.body };
  };

  const probe = (
    check: () => boolean,
    up: string,
    down: string,
    why?: () => string | undefined,
  ): Handler => {
    return () => {
      let good = false;
      let reason: string | undefined;
      try {
        good = check();
        if (!good) reason = why?.();
      } catch (err) {
        log.warn('probe check failed', { error: (err as Error).message });
      }
      const body = good ? { status: up } : { status: down, ...(reason ? { reason } : {}) };
      return Promise.resolve({ status: good ? 200 : 503, body });
    };
  };

  const routes = new Map<string, Record<string, Handler>>([
    [PATHS.healthz, { GET: probe(() => deps.health.healthy(), 'ok', 'unhealthy') }],
    [
      PATHS.readyz,
      {
        GET: probe(
          () => deps.health.ready(),
          'ready',
          'not ready',
          () => deps.health.notReadyReason?.(),
        ),
      },
    ],
    [
      PATHS.metrics,
      {
        GET: async () => ({
          status: 200,
          body: await deps.metrics.render(),
          contentType: deps.metrics.contentType,
        }),
      },
    ],
    [PATHS.debugPool, { GET: () => Promise.resolve({ status: 200, body: deps.pool.debugPool() }) }],
    [
      PATHS.requestIpConfigs,
      {
        POST: withBody(parseIpConfigsRequest, (request) => {
          const waiting = deps.assignGate?.();
          if (waiting !== undefined) {
            log.info('ip request deferred', {
              pod: `${request.podNamespace}/${request.podName}`,
              reason: waiting,
            });
            return ipamReply(notYet(request, waiting));
          }
          const outcome = requestIpConfigs(deps.store, request);
          if (outcome.changed) {
            log.info('ip assigned', {
              podInterfaceID: request.podInterfaceID,
              pod: `${request.podNamespace}/${request.podName}`,
              ip: outcome.changed.ip,
            });
          } else if (outcome.error === undefined) {
            log.warn('no available ip', {
              podInterfaceID: request.podInterfaceID,
              pod: `${request.podNamespace}/${request.podName}`,
            });
            try {
              deps.onNoIp?.(request);
            } catch (err) {
              log.error('onNoIp hook failed', { error: (err as Error).message });
            }
          }
          notify('assigned', outcome);
          for (const record of outcome.replaced ?? [])
            notify('replaced', { ...outcome, changed: record });
          return ipamReply(outcome);
        }),
      },
    ],
    [
      PATHS.releaseIpConfigs,
      {
        POST: withBody(parseIpConfigsRequest, (request) => {
          const outcome = releaseIpConfigs(deps.store, request);
          if (!outcome.changed && outcome.error === undefined && deps.onUnmatchedRelease) {
            for (const record of deps.onUnmatchedRelease(request)) {
              log.info('adopted ip released', {
                podInterfaceID: request.podInterfaceID,
                pod: `${request.podNamespace}/${request.podName}`,
                ip: record.ip,
              });
              notify('released', { ...outcome, changed: record });
            }
          }
          if (outcome.changed) {
            log.info('ip released', {
              podInterfaceID: request.podInterfaceID,
              ip: outcome.changed.ip,
              state: outcome.changed.state,
            });
          }
          notify('released', outcome);
          return ipamReply(outcome);
        }),
      },
    ],
    [
      PATHS.debugIpAddresses,
      {
        POST: withBody(parseStateFilter, (states) =>
          ipamReply(listIpAddresses(deps.store, states)),
        ),
      },
    ],
  ]);

  const send = (req: IncomingMessage, res: ServerResponse, reply: Reply): void => {
    if (res.headersSent || res.destroyed) return;
    const text =
      typeof reply.body === 'string' && reply.contentType !== undefined
        ? reply.body
        : JSON.stringify(reply.body);
    res.statusCode = reply.status;
    res.setHeader('content-type', reply.contentType ?? JSON_TYPE);
    res.setHeader('content-length', Buffer.byteLength(text));
    res.setHeader('cache-control', 'no-store');
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
    res.end(req.method === 'HEAD' ? undefined : text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = now();
    const method = req.method ?? 'GET';
    // Only the path selects the route; a query string changes nothing.
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const methods = routes.get(path);
    const route = methods ? path : 'unmatched';
    let reply: Reply;
    try {
      if (!authorized(path, req.headers.authorization, deps.token?.())) {
        reply = errorReply(401, UNAUTHORIZED_MESSAGE);
        reply.headers = { 'www-authenticate': WWW_AUTHENTICATE };
        // The body is never read: do not reuse the socket.
        reply.headers.connection = 'close';
      } else if (!methods) {
        reply = errorReply(404, `no such endpoint: ${path.slice(0, 200)}`, ReturnCode.NotFound);
      } else {
        const handler = methods[method] ?? (method === 'HEAD' ? methods.GET : undefined);
        if (handler) {
          reply = await handler(req);
        } else {
          const allowed = Object.keys(methods).join(', ');
          reply = errorReply(
            405,
            `method ${method.slice(0, 20)} not allowed on ${path}; use ${allowed}`,
            ReturnCode.UnsupportedVerb,
          );
          reply.headers = { allow: methods.GET ? `${allowed}, HEAD` : allowed };
        }
      }
    } catch (err) {
      log.error('request handler failed', { path, method, error: (err as Error).message });
      reply = errorReply(500, 'internal error', ReturnCode.UnexpectedError);
    }
    if (reply.status >= 400 && reply.status < 500) {
      log.warn('request refused', { path: path.slice(0, 200), method, status: reply.status });
    }
    send(req, res, reply);
    deps.metrics.observeHttp(
      ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'].includes(method) ? method : 'other',
      route,
      reply.status,
      (now() - started) / 1000,
    );
  };

  let inFlight = 0;
  let drained: (() => void) | undefined;
  const server = createServer((req, res) => {
    inFlight++;
    res.on('close', () => {
      inFlight--;
      if (inFlight === 0) drained?.();
    });
    handle(req, res).catch((err: unknown) => {
      log.error('request failed', { error: (err as Error).message });
      if (!res.headersSent) res.destroy();
    });
  });
  // A slow or stuck client must not hold a socket forever.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;

  let closing: Promise<void> | undefined;
  let socketPath: string | undefined;

  return {
    server,
    listen(host, port) {
      return new Promise((resolve, reject) => {
        const onError = (err: Error): void => reject(err);
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          const addr = server.address() as AddressInfo;
          log.info('node api listening', { host: addr.address, port: addr.port });
          resolve({ host: addr.address, port: addr.port });
        });
      });
    },
    async listenUnix(path, opts) {
      await listenUnix(server, path, opts);
      socketPath = path;
      log.info('node api listening', { socket: path, mode: '0660', gid: opts.gid });
      return path;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        let timer: NodeJS.Timeout | undefined;
        const allDone = new Promise<void>((done) => {
          drained = done;
          if (inFlight === 0) done();
        });
        // Stop accepting; Node also closes idle keep-alive sockets here.
        const closed = new Promise<void>((done) => server.close(() => done()));
        server.closeIdleConnections();
        void allDone.then(() => server.closeIdleConnections());
        timer = setTimeout(() => {
          log.warn('node api close timed out, cutting connections', { inFlight });
          server.closeAllConnections();
        }, graceMs);
        timer.unref();
        void closed.then(() => {
          if (timer) clearTimeout(timer);
          timer = undefined;
          if (socketPath !== undefined) rmSync(socketPath, { force: true });
          log.info('node api closed');
          resolve();
        });
      });
      return closing;
    },
  };
}
