// A strict API server for the access tests: RBAC, a static token file with
// the users the tests name, and `as(token)` requests over real HTTP.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApiServer, ApiServerOptions } from '../../src/apiserver/server.ts';
import { call, withCrds, type Reply } from './helpers.ts';

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
  const as: StrictServer['as'] = (token, method, path, body, ct = 'application/json') =>
    call(
      server,
      method,
      path,
      body,
      ct,
      token === undefined ? {} : { Authorization: `Bearer ${token}` },
    );
  return {
    server,
    as,
    admin: (method, path, body, ct) => as(server.adminToken, method, path, body, ct),
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const RBAC = '/apis/rbac.authorization.k8s.io/v1';
