// The sidecar's metrics listener (--metrics-listen HOST:PORT, off unless
// given): GET /metrics only, the same registry the node API's /metrics
// serves, for a cluster's Prometheus. The node API stays where it is (the
// node's loopback or a unix socket): this listener serves no IPAM endpoint,
// no /debug page and no probe, so opening it to the pod network exposes
// counts, never a pod's address or a way to change the pool. As node
// agents do it (node-exporter's :9100, the Cilium agent's :9962): a port of
// its own, in the DaemonSet on the node's IP (status.hostIP).
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

export interface MetricsListener {
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** Serves `metrics` on host:port (0: any free port); rejects when it cannot bind. */
export async function startMetricsListener(
  host: string,
  port: number,
  metrics: MetricsSource,
): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found: this listener serves /metrics only\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain', Allow: 'GET, HEAD' });
      res.end('GET only\n');
      return;
    }
    metrics.render().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': metrics.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end(`${String(err)}\n`);
      },
    );
  });
  // A scraper keeps its connection; an idle one is not kept forever.
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
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
