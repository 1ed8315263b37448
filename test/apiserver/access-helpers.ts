// A strict API server for the access tests: RBAC, a static token file with
// the users the tests name, and `as(token)` requests over real HTTP.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import type { ApiServer, ApiServerOptions } from '../../harness/apiserver/server.ts';
import { withCrds, type Reply } from './helpers.ts';

export interface StrictServer {
  server: ApiServer;
  /** A request with `token` (undefined: no credentials). */
  as(
    token: string | undefined,
    method: string,
    path: string,
    body?: unknown,
    ct?: string,
  ): Promise<Reply>;
  /** A request as the admin (system:masters). */
  admin(method: string, path: string, body?: unknown, ct?: string): Promise<Reply>;
  close(): Promise<void>;
}

/** `users`: token → CSV rest (`user,uid,"g1,g2"`). */
export async function strictServer(
  users: Record<string, string>,
  opts: ApiServerOptions = {},
): Promise<StrictServer> {
  const dir = mkdtempSync(join(tmpdir(), 'pool-monitor-access-'));
  const file = join(dir, 'tokens.csv');
  writeFileSync(
    file,
    Object.entries(users)
      .map(([t, rest]) => `${t},${rest}`)
      .join('\n'),
  );
  const server = await withCrds({
    tokenAuthFile: file,
    authorizationMode: 'RBAC',
    kubeconfigPath: join(dir, 'kubeconfig'),
    ...opts,
  });
  // Over TLS, requests trust the server's CA (and nothing else).
  const dispatcher = new Agent(server.caPem ? { connect: { ca: server.caPem } } : {});
  const as: StrictServer['as'] = async (token, method, path, body, ct = 'application/json') => {
    const headers: Record<string, string> = { 'Content-Type': ct };
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(server.url + path, {
      method,
      headers,
      dispatcher,
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text };
    }
    return { status: res.status, body: parsed, headers: res.headers as unknown as Headers };
  };
  return {
    server,
    as,
    admin: (method, path, body, ct) => as(server.adminToken, method, path, body, ct),
    async close() {
      await server.close();
      await dispatcher.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const RBAC = '/apis/rbac.authorization.k8s.io/v1';
