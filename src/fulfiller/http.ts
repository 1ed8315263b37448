// The fulfiller's own HTTP listener (--listen, default 127.0.0.1:10093):
//   GET /healthz  200 while the process runs its loops (503 once stopping);
//   GET /readyz   200 once the Node and NNC watches have listed and while
//                 both run (on the leader and the standby alike: a standby
//                 is ready to take over), 503 before, while an action waits
//                 for a fresh view (`waiting` says why) and while stopping;
//   GET /metrics  the fulfiller's registry in Prometheus text.
// Both probes answer JSON with the facts behind them.
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FulfillerMetrics } from './metrics.ts';

export interface HealthSource {
  /** Both watches listed. */
  ready(): boolean;
  /** Why actions wait for a fresh view (a watch down), if they do. */
  waiting?(): string | undefined;
  leading(): boolean;
  stopping(): boolean;
}

export interface FulfillerHttp {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Parses HOST:PORT (IPv4, hostname or [IPv6]); throws a one-line error. */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new Error(`--listen must be HOST:PORT, got "${value}"`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

export async function startFulfillerHttp(
  listen: { host: string; port: number },
  health: HealthSource,
  metrics: FulfillerMetrics,
): Promise<FulfillerHttp> {
  const json = (res: ServerResponse, code: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(text);
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'GET only' });
    const waiting = health.waiting?.();
    const facts = {
      ready: health.ready() && waiting === undefined,
      leader: health.leading(),
      stopping: health.stopping(),
      ...(waiting !== undefined ? { waiting } : {}),
    };
    switch (path) {
      case '/healthz':
        return json(res, facts.stopping ? 503 : 200, facts);
      case '/readyz':
        return json(res, facts.ready && !facts.stopping ? 200 : 503, facts);
      case '/metrics':
        metrics.render().then(
          (text) => {
            res.writeHead(200, { 'Content-Type': metrics.contentType });
            res.end(text);
          },
          (err: unknown) => json(res, 500, { error: String(err) }),
        );
        return;
      default:
        return json(res, 404, { error: 'not found' });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
