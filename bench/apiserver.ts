// Benchmark of the local API server: small merge patches per second (server
// in its own process, as `bin/pool-monitor apiserver`, client here over
// keep-alive HTTP) and watch fan-out: N patches delivered to 1,000 watchers.
// Usage: node bench/apiserver.ts [--patches N] [--watchers N]
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NAMESPACE, GROUP, NNC_KIND, NNC_VERSION, nncPath } from '../src/nnc/types.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const PATCHES = arg('--patches', 20_000);
const WATCHERS = arg('--watchers', 1000);
const FANOUT_EVENTS = arg('--fanout-events', 100);
const CONCURRENCY = 32;
const NNC = nncPath(DEFAULT_NAMESPACE);

async function startServer(): Promise<{ url: URL; stop(): Promise<void> }> {
  const child = spawn(
    `${root}bin/pool-monitor`,
    ['apiserver', '--port', '0', '--crds', `${root}manifests/crds`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<URL>((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"url":"([^"]+)"/.exec(buf);
      if (m) resolve(new URL(m[1] as string));
    });
    child.once('exit', (code) => reject(new Error(`apiserver exited with ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function send(
  agent: Agent,
  url: URL,
  method: string,
  path: string,
  body: string,
  contentType: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) },
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

async function benchPatches(url: URL): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const names = Array.from({ length: 100 }, (_, i) => `node-${i}`);
  for (const name of names)
    await send(
      agent,
      url,
      'POST',
      NNC,
      JSON.stringify({
        apiVersion: `${GROUP}/${NNC_VERSION}`,
        kind: NNC_KIND,
        metadata: { name },
        spec: { requestedIPCount: 0 },
      }),
      'application/json',
    );
  let next = 0;
  let failures = 0;
  const worker = async (): Promise<void> => {
    while (next < PATCHES) {
      const i = next++;
      const name = names[i % names.length] as string;
      const code = await send(
        agent,
        url,
        'PATCH',
        `${NNC}/${name}`,
        `{"spec":{"requestedIPCount":${i}}}`,
        'application/merge-patch+json',
      );
      if (code !== 200) failures++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `patches: ${PATCHES} small merge patches, ${CONCURRENCY} concurrent, in ${secs.toFixed(2)} s = ${Math.round(PATCHES / secs)} patches/s (${failures} failed)`,
  );
  agent.destroy();
}

async function benchFanout(url: URL): Promise<void> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const counts = new Array<number>(WATCHERS).fill(0);
  let done = 0;
  let resolveAll: () => void = () => undefined;
  const all = new Promise<void>((r) => (resolveAll = r));
  const reqs: ReturnType<typeof request>[] = [];
  const opened: Promise<void>[] = [];
  for (let w = 0; w < WATCHERS; w++) {
    opened.push(
      new Promise<void>((ready) => {
        const req = request(
          {
            agent,
            host: url.hostname,
            port: url.port,
            path: `${NNC}?watch=true&resourceVersion=&fieldSelector=metadata.name%3Dfan`,
          },
          (res) => {
            ready();
            let buf = '';
            res.on('data', (d: Buffer) => {
              buf += d.toString();
              let i;
              while ((i = buf.indexOf('\n')) >= 0) {
                buf = buf.slice(i + 1);
                counts[w] = (counts[w] ?? 0) + 1;
                if (counts[w] === FANOUT_EVENTS + 1) {
                  done++;
                  if (done === WATCHERS) resolveAll();
                }
              }
            });
            res.on('error', () => undefined);
          },
        );
        req.on('error', () => undefined);
        req.end();
        reqs.push(req);
      }),
    );
  }
  await Promise.all(opened);
  const writer = new Agent({ keepAlive: true, maxSockets: 1 });
  const t0 = performance.now();
  await send(
    writer,
    url,
    'POST',
    NNC,
    JSON.stringify({ metadata: { name: 'fan' }, spec: { requestedIPCount: 0 } }),
    'application/json',
  );
  for (let i = 1; i <= FANOUT_EVENTS; i++)
    await send(
      writer,
      url,
      'PATCH',
      `${NNC}/fan`,
      `{"spec":{"requestedIPCount":${i}}}`,
      'application/merge-patch+json',
    );
  await all;
  const secs = (performance.now() - t0) / 1000;
  const deliveries = WATCHERS * (FANOUT_EVENTS + 1);
  console.log(
    `watch fan-out: ${FANOUT_EVENTS + 1} events to ${WATCHERS} watchers (${deliveries} deliveries) in ${secs.toFixed(2)} s = ${Math.round(deliveries / secs)} events/s delivered`,
  );
  for (const r of reqs) r.destroy();
  writer.destroy();
  agent.destroy();
}

const server = await startServer();
try {
  await benchPatches(server.url);
  await benchFanout(server.url);
} finally {
  await server.stop();
}
