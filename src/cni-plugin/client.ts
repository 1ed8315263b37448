// The node API as the plugin calls it: JSON over HTTP on the sidecar's unix
// socket or loopback port, the bearer token read from its file once per
// invocation. Each call has its own deadline (30 s: a node starting 110
// pods at once answers slowly); a connection that fails or times out is
// reported as "try again later" (the sidecar restarts, the runtime retries).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { CniCode, CniError } from './errors.ts';
import type { IpamConfig } from './config.ts';

export interface HttpAnswer {
  status: number;
  body: unknown;
}

export interface NodeApiClient {
  /** A JSON POST (or a GET without body); rejects with a CniError when the sidecar cannot be reached. */
  call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<HttpAnswer>;
}

/** The token from the configured file: absent and not asked for, none. */
export function readToken(file: IpamConfig['tokenFile']): string | undefined {
  try {
    const token = readFileSync(file.path, 'utf8').trim();
    return token === '' ? undefined : token;
  } catch (err) {
    if (!file.required && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CniError(
      CniCode.InvalidConfig,
      `invalid network configuration: ipam.tokenFile ${file.path} cannot be read: ${(err as Error).message}`,
    );
  }
}

export function nodeApiClient(conf: IpamConfig, timeoutMs = 30_000): NodeApiClient {
  let token: string | undefined | null = null;
  const target =
    conf.nodeAPI.kind === 'unix'
      ? { socketPath: conf.nodeAPI.path }
      : { host: conf.nodeAPI.host, port: conf.nodeAPI.port };
  return {
    call(method, path, body) {
      if (token === null) token = readToken(conf.tokenFile);
      const text = body === undefined ? undefined : JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = http.request(
          {
            ...target,
            method,
            path,
            timeout: timeoutMs,
            headers: {
              ...(text !== undefined ? { 'content-type': 'application/json' } : {}),
              ...(token ? { authorization: `Bearer ${token}` } : {}),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              let parsed: unknown;
              try {
                parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
              } catch {
                parsed = undefined;
              }
              resolve({ status: res.statusCode ?? 0, body: parsed });
            });
            res.on('error', (err) => reject(unreachable(conf, err)));
          },
        );
        req.on('timeout', () =>
          req.destroy(new Error(`connected, but no answer within ${timeoutMs} ms`)),
        );
        req.on('error', (err) => reject(unreachable(conf, err)));
        req.end(text);
      });
    },
  };
}

function unreachable(conf: IpamConfig, err: Error): CniError {
  return new CniError(
    CniCode.TryAgainLater,
    `cannot reach the node's pool-monitor sidecar at ${conf.nodeAPIText}: ${err.message}` +
      ' (is the pool-monitor DaemonSet running on this node?)',
  );
}
