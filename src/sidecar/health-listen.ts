// The sidecar's probe listener (--health-listen HOST:PORT, off unless given):
// GET /healthz and /readyz only, as the node API answers them, for a
// kubelet that cannot probe a unix socket. The node API itself then stays on
// its socket behind its token (docs/decisions/0037), as the Cilium agent
// keeps its API on a socket and its health on a loopback port of its own.
// No IPAM endpoint, no /debug page, no pod data.
import { startSideListener, type SideListener } from './side-listener.ts';

export interface HealthSource {
  healthy(): boolean;
  ready(): boolean;
  notReadyReason?(): string | undefined;
}

export type HealthListener = SideListener;

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
export function startHealthListener(
  host: string,
  port: number,
  health: HealthSource,
): Promise<HealthListener> {
  return startSideListener(host, port, ['/healthz', '/readyz'], (path, req, res) => {
    const answer = probeAnswer(path, health)!;
    const text = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  });
}
