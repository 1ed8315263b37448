// Real kubectl (the oldest and newest supported: 1.27 and 1.33) against the
// server: `kubectl apply --dry-run=server` of a DaemonSet with an unknown field
// or a selector its template does not match is refused with kube-apiserver's
// words, and a good one passes (validation/).
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { KUBECTL_VERSIONS, kubectlBin, runKubectl, type KubectlRun } from '../support/kubectl.ts';

const daemonSet = (extra: string, templateApp = 'agent'): string => `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: kube-system
spec:
  selector:
    matchLabels: {app: agent}
${extra}  template:
    metadata:
      labels: {app: ${templateApp}}
    spec:
      containers:
      - name: agent
        image: busybox
`;

for (const version of KUBECTL_VERSIONS) {
  const bin = kubectlBin(version) ?? '';
  const maybe = bin ? describe : describe.skip;
  maybe(`validation: kubectl ${version} apply --dry-run=server`, function () {
    this.timeout(60_000);
    let server: ApiServer;
    let cache: string;

    const apply = (input: string): Promise<KubectlRun> =>
      runKubectl(
        bin,
        [
          '--kubeconfig',
          server.kubeconfigPath,
          '--cache-dir',
          cache,
          'apply',
          '--dry-run=server',
          '-f',
          '-',
        ],
        input,
      );

    before(async () => {
      server = await startApiServer();
      cache = mkdtempSync(join(tmpdir(), 'kubectl-cache-'));
    });
    after(async () => {
      await server.close();
      rmSync(cache, { recursive: true, force: true });
    });

    it('accepts a valid DaemonSet', async () => {
      const r = await apply(daemonSet(''));
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.match(/daemonset.apps\/agent created \(server dry run\)/);
    });

    it('refuses an unknown field (kubectl asks for fieldValidation=Strict)', async () => {
      const r = await apply(daemonSet('  foo: bar\n'));
      expect(r.code).to.not.equal(0);
      expect(r.err).to.include('Error from server (BadRequest)');
      expect(r.err).to.include(
        'DaemonSet in version "v1" cannot be handled as a DaemonSet: strict decoding error: unknown field "spec.foo"',
      );
    });

    it('refuses a selector that does not match the template labels', async () => {
      const r = await apply(daemonSet('', 'other'));
      expect(r.code).to.not.equal(0);
      expect(r.err).to.include(
        'The DaemonSet "agent" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`',
      );
    });
  });
}
