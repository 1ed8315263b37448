// Node API figures: CNI request/release round trips over loopback HTTP on
// the real SQLite store (in memory and on disk with synchronous=FULL), and
// the cost of a /metrics scrape. Run: node bench/nodeapi.ts
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openIpStore } from '../src/ipstore/sqlite-store.ts';
import type { SqliteIpStore } from '../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../src/log/logger.ts';
import { MetricsCollector } from '../src/metrics/collector.ts';
import { poolStatusSource } from '../src/nodeapi/debug-pool.ts';
import { createNodeApi } from '../src/nodeapi/server.ts';

const POOL = 250;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1000);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function send(port: number, method: string, path: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

function line(name: string, samples: number[]): void {
  const s = [...samples].sort((a, b) => a - b);
  const total = samples.reduce((a, b) => a + b, 0);
  console.log(
    `${name.padEnd(44)} p50 ${pct(s, 50).toFixed(3)} ms  p99 ${pct(s, 99).toFixed(3)} ms  ` +
      `${((samples.length / total) * 1000).toFixed(0)} req/s`,
  );
}

async function run(label: string, store: SqliteIpStore): Promise<void> {
  store.syncInventory([
    {
      id: 'nc',
      assignmentMode: 'dynamic',
      primaryIP: '10.1.0.4',
      subnetName: 'podnet',
      subnetAddressSpace: '10.1.0.0/16',
      defaultGateway: '10.1.0.1',
      ipAssignments: Array.from({ length: POOL }, (_, i) => ({
        name: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        ip: `10.1.${1 + Math.floor(i / 250)}.${(i % 250) + 1}`,
      })),
    },
  ]);
  const metrics = new MetricsCollector({ defaultMetrics: true });
  const api = createNodeApi({
    store,
    health: { healthy: () => true, ready: () => true },
    pool: poolStatusSource(() => undefined, store),
    metrics,
    logger: silentLogger(),
  });
  metrics.setPoolSource(() => ({ observation: { request: POOL }, counts: store.counts() }));
  const { port } = await api.listen('127.0.0.1', 0);
  const body = (n: number): string =>
    JSON.stringify({
      podInterfaceID: `if-${n}`,
      infraContainerID: `c-${n}`,
      orchestratorContext: { PodName: `p-${n}`, PodNamespace: 'bench' },
    });
  const req: number[] = [];
  const rel: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const n = i % POOL;
    let t = performance.now();
    await send(port, 'POST', '/network/requestipconfigs', body(n));
    req.push(performance.now() - t);
    t = performance.now();
    await send(port, 'POST', '/network/releaseipconfigs', body(n));
    rel.push(performance.now() - t);
  }
  const garbage: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    await send(port, 'POST', '/network/requestipconfigs', '{"podInterfaceID": 3}');
    garbage.push(performance.now() - t);
  }
  // 200 pods holding an IP while scraping.
  for (let i = 0; i < 200; i++) await send(port, 'POST', '/network/requestipconfigs', body(i));
  const scrape: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await send(port, 'GET', '/metrics');
    scrape.push(performance.now() - t);
  }
  line(`${label}: requestipconfigs`, req);
  line(`${label}: releaseipconfigs`, rel);
  line(`${label}: refused body (400)`, garbage);
  line(`${label}: GET /metrics (defaults on)`, scrape);
  await api.close();
  store.close();
}

console.log(`node api bench: ${ROUNDS} rounds, pool of ${POOL}, keep-alive loopback`);
await run('sqlite :memory:', openIpStore({ memory: true }));
const dir = mkdtempSync(join(tmpdir(), 'nodeapi-bench-'));
try {
  await run('sqlite file FULL', openIpStore({ stateDir: dir }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
agent.destroy();
console.log(`rss ${(process.memoryUsage().rss / 1024 / 1024).toFixed(1)} MiB`);
