// The sidecar's probe listener (--health-listen HOST:PORT, off unless given):
// GET /healthz and /readyz only, as the node API answers them, for a
// kubelet that cannot probe a unix socket. The node API itself then stays on
// its socket behind its token (docs/decisions/0037), as the Cilium agent
// keeps its API on a socket and its health on a loopback port of its own.
// No IPAM endpoint, no /debug page, no pod data.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthSource {
  healthy(): boolean;
  ready(): boolean;
  notReadyReason?(): string | undefined;
}

export interface HealthListener {
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** The probe's status and JSON body, as the node API's /healthz and /readyz give them. */
export function probeAnswer(
  path: string,
  health: HealthSource,
): { status: number; body: Record<string, string> } | undefined {
  let good = false;
  let reason: string | undefined;
  try {
    if (path === '/healthz') good = health.healthy();
    else if (path === '/readyz') {
      good = health.ready();
      if (!good) reason = health.notReadyReason?.();
    } else return undefined;
  } catch {
    good = false;
  }
  const [up, down] = path === '/healthz' ? ['ok', 'unhealthy'] : ['ready', 'not ready'];
  return good
    ? { status: 200, body: { status: up } }
    : { status: 503, body: { status: down, ...(reason ? { reason } : {}) } };
}

/** Serves the probes on host:port (0: any free port); rejects when it cannot bind. */
export async function startHealthListener(
  host: string,
  port: number,
  health: HealthSource,
): Promise<HealthListener> {
  const server: Server = createServer((req, res) => {
    const answer = probeAnswer((req.url ?? '/').split('?')[0] ?? '/', health);
    if (!answer) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found: this listener serves /healthz and /readyz only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain', Allow: 'GET, HEAD' });
      res.end('GET only\n');
      return;
    }
    const text = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    host,
    port: bound,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
