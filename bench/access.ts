// What authentication, RBAC and admission cost per request on the local API
// server: the sidecar's hot write (a server-side apply of its NNC's spec)
// and read (a list of its NNC by name), sequential over one kept-alive
// connection, in CPU time, best of alternating rounds, (a) as the admin on an open server (AlwaysAllow, no policy:
// the embedded cluster before docs/decisions/0018) and (b) as the sidecar with its
// Node-bound token under RBAC with manifests/ applied (its isolation policy
// evaluated on every write). Then RBAC decisions alone, in process: the
// scan of every binding vs the index by subject, with 600 bindings.
// Usage: node bench/access.ts [--requests N] [--rounds N]
import { Agent, request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { RbacIndex } from '../harness/apiserver/auth/rbac-index.ts';
import {
  rbacAuthorize,
  type RbacSource,
  type RequestAttributes,
} from '../harness/apiserver/auth/rbac.ts';
import type { KObject } from '../src/kube/json-object.ts';
import { startApiServer, type ApiServer } from '../harness/apiserver/server.ts';
import { grantProductAccess } from '../harness/embedded/access.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import { DEFAULT_NAMESPACE, GROUP, NNC_PLURAL, nncPath } from '../src/nnc/types.ts';
import { nncObject } from '../test/support/test-cluster.ts';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const REQUESTS = arg('--requests', 2000);
const ROUNDS = arg('--rounds', 3);
const CRDS = fileURLToPath(new URL('../manifests/crds/', import.meta.url));
const NNC = nncPath(DEFAULT_NAMESPACE);

function send(
  agent: Agent,
  url: URL,
  token: string,
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body !== undefined
            ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) }
            : {}),
        },
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

const apply = (i: number): string =>
  JSON.stringify(nncObject('node-0', { requestedIPCount: 16 + (i % 2) * 16 }));

/** CPU µs per request of the sidecar's apply and list, sequential, after a warm-up. */
async function perRequest(
  server: ApiServer,
  token: string,
): Promise<{ apply: number; list: number }> {
  const url = new URL(server.url);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const applyPath = `${NNC}/node-0?fieldManager=azure-cns&force=true`;
  const listPath = `${NNC}?fieldSelector=metadata.name%3Dnode-0`;
  const run = async (n: number, one: (i: number) => Promise<number>): Promise<number> => {
    // CPU time (server and client share this process): on a shared machine
    // it moves far less than wall time does.
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const code = await one(i);
      if (code !== 200) throw new Error(`status ${code}`);
    }
    const used = process.cpuUsage(t0);
    return (used.user + used.system) / n;
  };
  const doApply = (i: number) =>
    send(agent, url, token, 'PATCH', applyPath, apply(i), 'application/apply-patch+yaml');
  const doList = () => send(agent, url, token, 'GET', listPath);
  await run(300, doApply);
  await run(300, doList);
  const out = { apply: await run(REQUESTS, doApply), list: await run(REQUESTS, doList) };
  agent.destroy();
  return out;
}

interface Target {
  server: ApiServer;
  token: string;
  close(): Promise<void>;
}

async function open(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-access-'));
  const server = await startApiServer({ crdsDir: CRDS, kubeconfigPath: join(dir, 'kubeconfig') });
  const agent = new Agent({ keepAlive: true });
  await send(agent, new URL(server.url), server.adminToken, 'POST', NNC, apply(0));
  agent.destroy();
  return {
    server,
    token: server.adminToken,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function strict(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-access-'));
  const server = await startApiServer({
    authorizationMode: 'RBAC',
    anonymous: false,
    kubeconfigPath: join(dir, 'kubeconfig'),
  });
  const loaded = loadKubeConfig({ kubeconfig: server.kubeconfigPath });
  const access = await grantProductAccess(loaded.kc);
  const url = new URL(server.url);
  const agent = new Agent({ keepAlive: true });
  const node = '{"metadata":{"name":"node-0"}}';
  await send(agent, url, server.adminToken, 'POST', '/api/v1/nodes', node);
  await send(agent, url, server.adminToken, 'POST', NNC, apply(0));
  agent.destroy();
  return {
    server,
    token: await access.token('sidecar', 'node-0'),
    async close() {
      await server.close();
      await loaded.connections.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** 600 bindings (300 cluster-wide, 300 in kube-system), one of them the sidecar's. */
function bigRbac(): RbacSource {
  const binding = (name: string, subject: string, namespace?: string): KObject => ({
    metadata: { name, ...(namespace ? { namespace } : {}) },
    roleRef: { kind: 'ClusterRole', name: 'reader' },
    subjects: [{ kind: 'User', name: subject }],
  });
  const crbs = Array.from({ length: 300 }, (_, i) => binding(`crb-${i}`, `user-${i}`));
  const rbs = Array.from({ length: 300 }, (_, i) => binding(`rb-${i}`, `user-${i}`, 'kube-system'));
  rbs.push({
    metadata: { name: 'sidecar', namespace: 'kube-system' },
    roleRef: { kind: 'ClusterRole', name: 'reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'pool-monitor', namespace: 'kube-system' }],
  });
  // The RBAC objects as manifests write them: names, groups and resources spelled out.
  const reader: KObject = {
    metadata: { name: 'reader' },
    rules: [
      { apiGroups: ['acn.azure.com'], resources: ['nodenetworkconfigs'], verbs: ['list', 'patch'] },
    ],
  };
  return {
    clusterRole: (n) => (n === 'reader' ? reader : undefined),
    role: () => undefined,
    clusterRoleBindings: () => crbs,
    roleBindings: (ns) => (ns === 'kube-system' ? rbs : []),
  };
}

function decisions(): { scan: number; index: number } {
  const src = bigRbac();
  const a: RequestAttributes = {
    user: {
      username: 'system:serviceaccount:kube-system:pool-monitor',
      uid: '',
      groups: [
        'system:serviceaccounts',
        'system:serviceaccounts:kube-system',
        'system:authenticated',
      ],
      extra: {},
    },
    verb: 'patch',
    resourceRequest: true,
    path: '',
    apiGroup: GROUP,
    resource: NNC_PLURAL,
    subresource: '',
    namespace: DEFAULT_NAMESPACE,
    name: 'node-0',
  };
  const index = new RbacIndex(src);
  const time = (decide: () => boolean): number => {
    const n = 20_000;
    for (let i = 0; i < 1000; i++) decide();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) if (!decide()) throw new Error('denied');
    return ((performance.now() - t0) * 1000) / n;
  };
  return {
    scan: time(() => rbacAuthorize(a, src).allowed),
    index: time(() => index.decide(a).allowed),
  };
}

// Rounds alternate the two servers; the best round of each counts (the
// machine is shared: the best is the least disturbed).
const targets = [await open(), await strict()] as const;
const best = [
  { apply: Infinity, list: Infinity },
  { apply: Infinity, list: Infinity },
];
for (let round = 0; round < ROUNDS; round++)
  for (const [i, t] of targets.entries()) {
    const r = await perRequest(t.server, t.token);
    best[i] = { apply: Math.min(best[i]!.apply, r.apply), list: Math.min(best[i]!.list, r.list) };
  }
for (const t of targets) await t.close();
const [before, after] = best as [{ apply: number; list: number }, { apply: number; list: number }];
const rbac = decisions();
const us = (v: number) => `${v.toFixed(0)} µs`;
console.log(
  `CPU per request, server and client (best of ${ROUNDS} rounds of ${REQUESTS}): NNC apply ${us(before.apply)} open (admin, AlwaysAllow, no policy) -> ` +
    `${us(after.apply)} as the sidecar (token, RBAC, isolation policy); ` +
    `NNC list ${us(before.list)} -> ${us(after.list)}`,
);
console.log(
  `RBAC decision with 600 bindings: scan of every binding ${rbac.scan.toFixed(1)} µs, index by subject ${rbac.index.toFixed(2)} µs`,
);
console.log(
  JSON.stringify({
    bench: 'access',
    requests: REQUESTS,
    applyOpenUs: Math.round(before.apply),
    applySidecarUs: Math.round(after.apply),
    listOpenUs: Math.round(before.list),
    listSidecarUs: Math.round(after.list),
    rbacScanUs: Number(rbac.scan.toFixed(2)),
    rbacIndexUs: Number(rbac.index.toFixed(3)),
  }),
);
