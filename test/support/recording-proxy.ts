// A pass-through HTTP proxy in front of the local API server that records
// every request one client makes (method, path, status, time), so a test can
// tell which of two fulfillers wrote what: each gets its own proxy and its own
// kubeconfig. Responses (watch streams included) are piped through unchanged.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeKubeconfig } from '../../harness/apiserver/kubeconfig.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  /** Path and query, as sent. */
  url: string;
  status: number;
  /** Date.now() when the request reached the proxy (it was sent no later). */
  sentAt: number;
  /** Date.now() when the response head arrived. */
  at: number;
  /** The request body of a write (everything but GET), as sent. */
  body?: string;
}

export interface RecordingProxy {
  url: string;
  kubeconfigPath: string;
  requests: RecordedRequest[];
  /** Requests that change something (everything but GET), sent at or after `since`. */
  writes(since?: number): RecordedRequest[];
  close(): Promise<void>;
}

/**
 * Told of each request before it is forwarded; 'drop' cuts the connection
 * instead (the request never lands); 'throttle' answers 429 with Retry-After: 1
 * as priority and fairness would (refused: the request never lands).
 */
export type Intercept = (req: { method: string; path: string }) => 'forward' | 'drop' | 'throttle';

/**
 * A proxy to `target.url`; its kubeconfig carries `token` (default: the
 * server's admin token).
 */
export async function startRecordingProxy(
  target: { url: string; adminToken?: string },
  token: string | undefined = target.adminToken,
  intercept?: Intercept,
): Promise<RecordingProxy> {
  const upstream = new URL(target.url);
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const sentAt = Date.now();
    const chunks: Buffer[] = [];
    const path = (req.url ?? '').split('?')[0]!;
    const verdict = intercept?.({ method: req.method ?? 'GET', path }) ?? 'forward';
    if (verdict === 'drop') {
      req.socket.destroy();
      return;
    }
    if (verdict === 'throttle') {
      requests.push({
        method: req.method ?? 'GET',
        path,
        url: req.url ?? '',
        status: 429,
        sentAt,
        at: Date.now(),
      });
      req.resume();
      res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '1' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'TooManyRequests',
          message: 'throttled by the test proxy',
          code: 429,
        }),
      );
      return;
    }
    if (req.method !== 'GET') req.on('data', (c: Buffer) => chunks.push(c));
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (up) => {
        requests.push({
          method: req.method ?? 'GET',
          path: (req.url ?? '').split('?')[0]!,
          url: req.url ?? '',
          status: up.statusCode ?? 0,
          sentAt,
          at: Date.now(),
          ...(req.method !== 'GET' ? { body: Buffer.concat(chunks).toString('utf8') } : {}),
        });
        res.writeHead(up.statusCode ?? 502, up.headers);
        res.flushHeaders(); // a watch answers its headers long before its first event
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'proxy-kubeconfig-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  writeKubeconfig(kubeconfigPath, url, token ? { token } : {});
  return {
    url,
    kubeconfigPath,
    requests,
    writes: (since = 0) => requests.filter((r) => r.method !== 'GET' && r.sentAt >= since),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
