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
import { authorized, UNAUTHORIZED_MESSAGE, WWW_AUTHENTICATE } from './auth.ts';
import { ReturnCode } from './cns.ts';
import { errorReply, JSON_TYPE, nodeApiRoutes, type NodeApiDeps, type Reply } from './routes.ts';
import { listenUnix, type UnixListenOptions } from './unix-listen.ts';

export type { HealthSource, NodeApiDeps, NodeApiMetrics, PoolStatusSource } from './routes.ts';

export interface NodeApi {
  listen(host: string, port: number): Promise<{ host: string; port: number }>;
  /** Listens on a unix socket (0660, group `gid`), removed on close; resolves with its path. */
  listenUnix(path: string, opts: UnixListenOptions): Promise<string>;
  close(): Promise<void>;
  /** The underlying server, for tests and the embedded mode. */
  readonly server: Server;
}

export function createNodeApi(deps: NodeApiDeps): NodeApi {
  const log = deps.logger.child({ component: 'nodeapi' });
  const now = deps.now ?? (() => performance.now());
  const graceMs = deps.closeGraceMs ?? 5000;

  const routes = nodeApiRoutes(deps, log);

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
