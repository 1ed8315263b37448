// A small listener of the sidecar's beside the node API (its metrics, its
// probes): an HTTP server on host:port that answers only the paths it is
// given, GET and HEAD only, keeps a scraper's connection a while but not
// forever, and closes every connection when it stops.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SideListener {
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

/**
 * Serves `handle` on host:port (0: any free port) for GET and HEAD of
 * `paths` (anything else: 404 naming them, or 405); rejects when it cannot
 * bind. Its `url` ends in `urlPath`.
 */
export async function startSideListener(
  host: string,
  port: number,
  paths: readonly string[],
  handle: (path: string, req: IncomingMessage, res: ServerResponse) => void,
  urlPath = '',
): Promise<SideListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (!paths.includes(path)) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end(`not found: this listener serves ${paths.join(' and ')} only\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain', Allow: 'GET, HEAD' });
      res.end('GET only\n');
      return;
    }
    handle(path, req, res);
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
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}${urlPath}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
