// A node's `bin/pool-monitor sidecar` process serving its node API on a unix
// socket with a bearer token, as a CNI plugin reaches it (the reference
// plugins' test in test/cni and bench/cni.ts): its own state directory, the
// kubeconfig of its Node's identity (RBAC on), and a wait until /readyz
// answers 200 over the socket.
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSidecar, type Cluster, type SidecarProcess } from '../sidecar/harness.ts';
import { waitFor } from './wait.ts';

/** One HTTP request over a unix socket; `token` goes as the bearer (none: no credentials). */
export function overSocket(
  sock: string,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath: sock,
        method,
        path,
        headers: {
          'content-type': 'application/json',
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(text) as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

export interface SocketSidecar {
  sidecar: SidecarProcess;
  sock: string;
}

/**
 * Starts the sidecar of `node` on `unix:<dir>/<name>.sock` with its state in
 * `<dir>/state-<name>`, the node API behind `tokenFile`, and a leak grace
 * (600 s) longer than any test, so that no address is reclaimed under it.
 */
export async function spawnSocketSidecar(
  c: Cluster,
  opts: { node: string; dir: string; name: string; tokenFile: string },
): Promise<SocketSidecar> {
  const sock = join(opts.dir, `${opts.name}.sock`);
  const state = join(opts.dir, `state-${opts.name}`);
  mkdirSync(state);
  const sidecar = spawnSidecar(
    [
      ...['--kubeconfig', await c.strict!.kubeconfigFile('sidecar', opts.node)],
      ...['--state-dir', state, '--listen', `unix:${sock}`],
      ...['--node-api-token-file', opts.tokenFile, '--leak-grace', '600'],
    ],
    { NODENAME: opts.node },
  );
  return { sidecar, sock };
}

/** Waits until the sidecar answers /readyz 200 over its socket (an error quotes its last lines); returns it. */
export async function socketReady<S extends SocketSidecar>(
  started: S,
  node: string,
  token: string,
  timeoutMs = 30_000,
): Promise<S> {
  const { sidecar, sock } = started;
  try {
    await waitFor(
      `${node} ready`,
      async () =>
        (await overSocket(sock, token, 'GET', '/readyz').catch(() => ({ status: 0 }))).status ===
        200,
      timeoutMs,
    );
    return started;
  } catch (err) {
    throw new Error(
      `${(err as Error).message}; sidecar said: ${sidecar.lines.slice(-5).join('\n')} ${sidecar.stderr()}`,
    );
  }
}
