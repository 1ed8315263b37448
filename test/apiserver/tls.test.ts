// The API server over TLS with the kubeconfig it writes, through the real
// kubectl 1.27 and 1.33: the CA verifies (no insecure-skip-tls-verify), a
// token lacking a permission gets the 403 naming user, verb and resource,
// and `kubectl create token` (1.33, bound to a Node) gives a token whose
// user carries the node-name extra.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { connect, type PeerCertificate } from 'node:tls';
import YAML from 'yaml';
import { mustKubectl, runKubectl } from '../support/kubectl.ts';
import { strictServer, type StrictServer } from './access-helpers.ts';

async function kubectl(
  version: string,
  args: string[],
): Promise<{ ok: boolean; out: string; err: string }> {
  const r = await runKubectl(mustKubectl(version), args, undefined, 60_000);
  return { ok: r.code === 0, out: r.out, err: r.err };
}

describe('apiserver: TLS with kubectl', function () {
  this.timeout(60_000);
  let s: StrictServer;
  before(async () => {
    s = await strictServer({ 'viewer-token': 'viewer,u-viewer' }, { tls: true });
    await s.admin('POST', '/api/v1/nodes', { metadata: { name: 'node-a' } });
    await s.admin('POST', '/api/v1/namespaces/kube-system/serviceaccounts', {
      metadata: { name: 'pool-monitor' },
    });
  });
  after(() => s.close());

  it('writes an https kubeconfig with the CA, and serves a certificate for 127.0.0.1 and localhost', async () => {
    const kc = YAML.parse(readFileSync(s.server.kubeconfigPath, 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
    };
    const cluster = kc.clusters[0]?.cluster ?? {};
    expect(cluster.server).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(cluster).to.not.have.property('insecure-skip-tls-verify');
    expect(
      Buffer.from(String(cluster['certificate-authority-data']), 'base64').toString(),
    ).to.equal(s.server.caPem);
    const cert = await new Promise<PeerCertificate>((resolve, reject) => {
      const sock = connect({ port: s.server.port, host: '127.0.0.1', ca: s.server.caPem }, () => {
        resolve(sock.getPeerCertificate());
        sock.end();
      });
      sock.on('error', reject);
    });
    expect(cert.subjectaltname).to.equal('IP Address:127.0.0.1, DNS:localhost');
  });

  for (const v of ['1.27', '1.33'])
    it(`kubectl ${v}: the written kubeconfig works; a token lacking a permission gets the 403`, async () => {
      const kc = ['--kubeconfig', s.server.kubeconfigPath];
      const ok = await kubectl(v, [...kc, 'get', 'nnc', '-n', 'kube-system']);
      expect(ok.ok, ok.err).to.equal(true);
      const denied = await kubectl(v, [
        ...kc,
        '--token',
        'viewer-token',
        'get',
        'nnc',
        '-n',
        'kube-system',
      ]);
      expect(denied.ok).to.equal(false);
      expect(denied.err).to.contain(
        'Error from server (Forbidden): nodenetworkconfigs.acn.azure.com is forbidden: User "viewer" cannot list resource "nodenetworkconfigs" in API group "acn.azure.com" in the namespace "kube-system"',
      );
      const bad = await kubectl(v, [...kc, '--token', 'nope', 'get', 'nnc', '-n', 'kube-system']);
      expect(bad.err).to.match(/Unauthorized/);
    });

  it('kubectl 1.33 create token --bound-object-kind Node: the token names its node', async () => {
    const kc = ['--kubeconfig', s.server.kubeconfigPath];
    const t = await kubectl('1.33', [
      ...kc,
      'create',
      'token',
      'pool-monitor',
      '-n',
      'kube-system',
      '--bound-object-kind',
      'Node',
      '--bound-object-name',
      'node-a',
    ]);
    expect(t.ok, t.err).to.equal(true);
    const who = await kubectl('1.33', [
      ...kc,
      '--token',
      t.out.trim(),
      'auth',
      'whoami',
      '-o',
      'json',
    ]);
    expect(who.ok, who.err).to.equal(true);
    type WhoAmI = { status: { userInfo: { username: string; extra: Record<string, string[]> } } };
    const info = (JSON.parse(who.out) as WhoAmI).status.userInfo;
    expect(info.username).to.equal('system:serviceaccount:kube-system:pool-monitor');
    expect(info.extra['authentication.kubernetes.io/node-name']).to.deep.equal(['node-a']);
  });
});
