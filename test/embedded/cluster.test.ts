// The embedded cluster in process, at two nodes: its sidecars' SQLite stores
// run with synchronous=NORMAL (state that dies with the process need not be
// fsynced per commit), while a sidecar started on its own keeps FULL; the
// API server is as strict as a real cluster, with manifests/ applied, and
// every component runs with its own token.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { productAccessReport, refusals } from '../../harness/embedded/access.ts';
import { startEmbeddedCluster } from '../../harness/embedded/cluster.ts';
import type { SqliteIpStore } from '../../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../../src/log/logger.ts';
import {
  DEFAULT_NAMESPACE,
  GROUP,
  NNC_KIND,
  NNC_PLURAL,
  NNC_VERSION,
} from '../../src/nnc/types.ts';
import { runSidecar } from '../../src/sidecar/run.ts';
import { waitFor } from '../support/wait.ts';

describe('embedded: cluster in process', function () {
  this.timeout(30_000);
  const runDir = mkdtempSync(join(tmpdir(), 'embedded-cluster-'));
  after(() => rmSync(runDir, { recursive: true, force: true }));

  it('opens every node store with synchronous=NORMAL; a standalone sidecar keeps FULL', async () => {
    const cluster = await startEmbeddedCluster({
      nodeNames: ['n-0', 'n-1'],
      podSubnet: '10.0.0.0/16',
      runDir,
      logger: silentLogger(),
      events: false,
    });
    try {
      for (const n of cluster.nodes) {
        const store = n.sidecar.inProcess?.store as SqliteIpStore;
        expect(store.durability().synchronous).to.equal('NORMAL');
      }
      const stateDir = join(runDir, 'standalone');
      mkdirSync(stateDir);
      const standalone = await runSidecar(
        {
          nodeName: 'n-0',
          namespace: DEFAULT_NAMESPACE,
          stateDir,
          listenHost: '127.0.0.1',
          listenPort: 0,
          logLevel: 'error',
          subnetState: 'name',
          releaseDelay: { kind: 'fixed', seconds: 0 },
          dryRun: true,
        },
        { kc: cluster.kc, logger: silentLogger(), defaultMetrics: false, events: false },
      );
      try {
        expect((standalone.store as SqliteIpStore).durability().synchronous).to.equal('FULL');
      } finally {
        await standalone.stop();
      }
    } finally {
      await cluster.stop();
    }
  });

  // The URL path on the wire, as a client outside sends it (spelled out).
  const nncPath = (name: string) =>
    `/apis/acn.azure.com/v1alpha/namespaces/${DEFAULT_NAMESPACE}/nodenetworkconfigs/${name}`;
  const call = async (url: string, token?: string, init: RequestInit = {}) => {
    const res = await fetch(url, {
      ...init,
      headers: {
        ...(init.headers as Record<string, string>),
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
      },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('runs RBAC with manifests/ applied: tokens required, each sidecar bound to its Node, nothing the product needs refused', async () => {
    const cluster = await startEmbeddedCluster({
      nodeNames: ['n-0', 'n-1'],
      podSubnet: '10.0.0.0/16',
      runDir,
      logger: silentLogger(),
    });
    try {
      expect(await cluster.whenReady(15_000)).to.equal(2);
      await cluster.fulfiller?.fulfiller.whenIdle();
      const { server, access } = cluster;
      // Each component did its work as its own service account, refused
      // nothing. A sidecar is ready before its first write: wait for both.
      const patchedBy = () =>
        productAccessReport(server.authorizations(), access.accounts)
          .sidecar.used.filter((r) => r.verb === 'patch' && r.resource === NNC_PLURAL)
          .map((r) => r.name)
          .sort();
      await waitFor('both sidecars wrote their NNC', () => patchedBy().length === 2, 15_000);
      const report = productAccessReport(server.authorizations(), access.accounts);
      expect(refusals(report)).to.deep.equal([]);
      expect(report.sidecar.user).to.equal('system:serviceaccount:kube-system:pool-monitor');
      expect(report.fulfiller.user).to.equal(
        'system:serviceaccount:kube-system:pool-monitor-fulfiller',
      );
      const patched = report.sidecar.used
        .filter((r) => r.verb === 'patch' && r.resource === NNC_PLURAL)
        .map((r) => r.name)
        .sort();
      expect(patched).to.deep.equal(['n-0', 'n-1']);
      expect(
        report.fulfiller.used.some((r) => r.resource === 'nodenetworkconfigs/status'),
      ).to.equal(true);

      // No credentials: 401 (the human has the admin kubeconfig).
      expect((await call(`${server.url}/api/v1/nodes`)).status).to.equal(401);

      // A sidecar's token names its node: n-0's may not write n-1's NNC.
      const token = await access.token('sidecar', 'n-0');
      const whoami = await call(
        `${server.url}/apis/authentication.k8s.io/v1/selfsubjectreviews`,
        token,
        {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'SelfSubjectReview',
          }),
        },
      );
      const userInfo = (whoami.body.status as { userInfo: { extra: Record<string, string[]> } })
        .userInfo;
      expect(userInfo.extra['authentication.kubernetes.io/node-name']).to.deep.equal(['n-0']);
      const apply = (name: string) =>
        call(`${server.url}${nncPath(name)}?fieldManager=azure-cns&force=true`, token, {
          method: 'PATCH',
          headers: { 'Content-Type': 'application/apply-patch+yaml' },
          body: JSON.stringify({
            apiVersion: `${GROUP}/${NNC_VERSION}`,
            kind: NNC_KIND,
            metadata: { name, namespace: DEFAULT_NAMESPACE },
            spec: { requestedIPCount: 250 },
          }),
        });
      const other = await apply('n-1');
      expect(other.status).to.equal(403);
      expect(other.body.message).to.match(
        /the sidecar of node n-0 may write only its own NodeNetworkConfig, not n-1/,
      );
    } finally {
      await cluster.stop();
    }
  });

  it('anonymousAdmin (embedded --serve): kubectl without credentials is admin, the components still use their tokens', async () => {
    const cluster = await startEmbeddedCluster({
      nodeNames: ['n-0'],
      podSubnet: '10.0.0.0/16',
      runDir,
      logger: silentLogger(),
      events: false,
      anonymousAdmin: true,
    });
    try {
      expect(await cluster.whenReady(15_000)).to.equal(1);
      expect((await call(`${cluster.server.url}${nncPath('n-0')}`)).status).to.equal(200);
      const report = productAccessReport(cluster.server.authorizations(), cluster.access.accounts);
      expect(report.sidecar.allowed).to.be.greaterThan(0);
      expect(report.fulfiller.allowed).to.be.greaterThan(0);
      expect(refusals(report)).to.deep.equal([]);
    } finally {
      await cluster.stop();
    }
  });
});
