// Starts a node API on an ephemeral loopback port with a fake store, fake
// probes and a captured log, and offers a raw HTTP helper (no keep-alive pool
// surprises: each call is one request on its own connection unless an agent
// is passed).
import http from 'node:http';
import winston from 'winston';
import { CaptureTransport } from '../../src/log/capture.ts';
import { MetricsCollector } from '../../src/metrics/collector.ts';
import { poolStatusSource } from '../../src/nodeapi/debug-pool.ts';
import type { PoolSnapshotInput } from '../../src/nodeapi/debug-pool.ts';
import type { IpamChange } from '../../src/nodeapi/ipam.ts';
import { createNodeApi } from '../../src/nodeapi/server.ts';
import type { NodeApi, NodeApiDeps } from '../../src/nodeapi/server.ts';
import type { NodeIpStore } from '../../src/ipstore/types.ts';
import { FakeStore } from './fake-store.ts';

export interface Harness {
  api: NodeApi;
  store: NodeIpStore;
  port: number;
  state: { healthy: boolean; ready: boolean; snapshot: PoolSnapshotInput | undefined };
  changes: IpamChange[];
  logs: CaptureTransport;
  metrics: MetricsCollector;
  close(): Promise<void>;
}

export async function startApi(
  store: NodeIpStore = FakeStore.withIps(4),
  extra: Partial<NodeApiDeps> = {},
  /** Listen on an ephemeral loopback port (false: the test listens itself, e.g. on a socket). */
  tcp = true,
): Promise<Harness> {
  const logs = new CaptureTransport();
  const logger = winston.createLogger({ level: 'debug', transports: [logs] });
  const state = {
    healthy: true,
    ready: false,
    snapshot: undefined as PoolSnapshotInput | undefined,
  };
  const changes: IpamChange[] = [];
  const metrics = new MetricsCollector({ defaultMetrics: false });
  const api = createNodeApi({
    store,
    health: { healthy: () => state.healthy, ready: () => state.ready },
    pool: poolStatusSource(() => state.snapshot, store),
    metrics,
    logger,
    onChange: (c) => changes.push(c),
    ...extra,
  });
  const { port } = tcp ? await api.listen('127.0.0.1', 0) : { port: 0 };
  return { api, store, port, state, changes, logs, metrics, close: () => api.close() };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: unknown;
}

export function call(
  port: number,
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  agent: http.Agent | false = false,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export const post = (port: number, path: string, body: unknown): Promise<RawResponse> =>
  call(port, 'POST', path, typeof body === 'string' ? body : JSON.stringify(body));

export function podRequest(
  n: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    podInterfaceID: `iface-${n}`,
    infraContainerID: `infra-${n}`,
    orchestratorContext: { PodName: `pod-${n}`, PodNamespace: 'default' },
    desiredIPAddresses: [],
    ...extra,
  };
}
