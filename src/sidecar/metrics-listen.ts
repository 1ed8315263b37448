// The sidecar's metrics listener (--metrics-listen HOST:PORT, off unless
// given): GET /metrics only, the same registry the node API's /metrics
// serves, for a cluster's Prometheus. The node API stays where it is (the
// node's loopback or a unix socket): this listener serves no IPAM endpoint,
// no /debug page and no probe, so opening it to the pod network exposes
// counts, never a pod's address or a way to change the pool. As node
// agents do it (node-exporter's :9100, the Cilium agent's :9962): a port of
// its own, in the DaemonSet on the node's IP (status.hostIP).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startSideListener, type SideListener } from './side-listener.ts';

export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

export type MetricsListener = SideListener;

/** Serves `metrics` on host:port (0: any free port); rejects when it cannot bind. */
export function startMetricsListener(
  host: string,
  port: number,
  metrics: MetricsSource,
): Promise<MetricsListener> {
  const serve = (_path: string, req: IncomingMessage, res: ServerResponse): void => {
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
  };
  return startSideListener(host, port, ['/metrics'], serve, '/metrics');
}
