// Real kubectl (the oldest and newest supported: 1.27 and 1.33) against a
// running server: apply the CRDs, then get/describe/apply/patch/delete and
// get -w on custom and core resources, client- and server-side apply.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { startApiServer } from '../../harness/apiserver/server.ts';
import { KUBECTL_VERSIONS, kubectlBin, runKubectl, type KubectlRun } from '../support/kubectl.ts';
import { CRDS_DIR } from './helpers.ts';

const NNC_YAML = (requested: number): string => `apiVersion: acn.azure.com/v1alpha
kind: NodeNetworkConfig
metadata:
  name: node-1
  namespace: kube-system
  labels: {pool: a}
spec:
  requestedIPCount: ${requested}
  ipsNotInUse: []
`;

const POD_YAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  nodeName: node-1
  containers:
  - name: app
    image: nginx:1
    ports: [{containerPort: 80}]
  - name: side
    image: busybox
`;

for (const version of KUBECTL_VERSIONS) {
  const bin = kubectlBin(version) ?? '';
  const maybe = bin ? describe : describe.skip;
  maybe(`cluster: kubectl ${version}`, function () {
    this.timeout(60_000);
    let server: ApiServer;
    let cache: string;

    const kubectl = (args: string[], input?: string): Promise<KubectlRun> =>
      runKubectl(
        bin,
        ['--kubeconfig', server.kubeconfigPath, '--cache-dir', cache, ...args],
        input,
      );
    const ok = async (args: string[], input?: string): Promise<string> => {
      const r = await kubectl(args, input);
      expect(r.code, `kubectl ${args.join(' ')}: ${r.err}`).to.equal(0);
      return r.out;
    };

    before(async () => {
      server = await startApiServer();
      cache = mkdtempSync(join(tmpdir(), 'kubectl-cache-'));
    });
    after(async () => {
      await server.close();
      rmSync(cache, { recursive: true, force: true });
    });

    it('applies the CRDs (kubectl apply -k manifests/crds), which makes NNC and CSS servable', async () => {
      const out = await ok(['apply', '-k', CRDS_DIR]);
      expect(out).to.match(/nodenetworkconfigs.acn.azure.com created/);
      expect(out).to.match(/clustersubnetstates.acn.azure.com created/);
      const res = await ok(['api-resources', '--api-group=acn.azure.com']);
      expect(res).to.match(
        /nodenetworkconfigs\s+nnc\s+acn.azure.com\/v1alpha\s+true\s+NodeNetworkConfig/,
      );
      expect(await ok(['get', 'crd'])).to.match(/nodenetworkconfigs.acn.azure.com/);
      // Re-applying unchanged is accepted.
      expect(await ok(['apply', '-k', CRDS_DIR])).to.match(/unchanged|configured/);
    });

    it('apply, get (table with printer columns), describe, patch and status patch an NNC', async () => {
      expect(await ok(['apply', '-f', '-'], NNC_YAML(16))).to.match(/node-1 created/);
      expect(await ok(['apply', '-f', '-'], NNC_YAML(32))).to.match(/node-1 configured/);
      const table = await ok(['get', 'nnc', '-n', 'kube-system']);
      expect(table).to.match(/NAME\s+REQUESTED\s+ALLOCATED\s+STATUS\s+AGE/);
      expect(table).to.match(/node-1\s+32/);
      await ok([
        'patch',
        'nnc',
        'node-1',
        '-n',
        'kube-system',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"assignedIPCount":32,"status":"Ready"}}',
      ]);
      await ok([
        'patch',
        'nnc',
        'node-1',
        '-n',
        'kube-system',
        '--type=json',
        '-p',
        '[{"op":"replace","path":"/spec/requestedIPCount","value":48}]',
      ]);
      const obj = JSON.parse(
        await ok(['get', 'nnc', 'node-1', '-n', 'kube-system', '-o', 'json']),
      ) as {
        spec: { requestedIPCount: number };
        status: { assignedIPCount: number };
        metadata: { generation: number };
      };
      expect(obj.spec.requestedIPCount).to.equal(48);
      expect(obj.status.assignedIPCount).to.equal(32);
      expect(obj.metadata.generation).to.equal(3);
      const desc = await ok(['describe', 'nnc', 'node-1', '-n', 'kube-system']);
      expect(desc).to.match(/Requested IP Count:\s+48/);
      expect(desc).to.match(/Assigned IP Count:\s+32/);
      const byLabel = await ok(['get', 'nnc', '-A', '-l', 'pool=a', '-o', 'name']);
      expect(byLabel.trim()).to.equal('nodenetworkconfig.acn.azure.com/node-1');
    });

    it('server-side apply: conflict without --force-conflicts, ownership moves with it', async () => {
      const r = await kubectl(
        ['apply', '--server-side', '--field-manager=azure-cns', '-f', '-'],
        NNC_YAML(8),
      );
      expect(r.code).to.not.equal(0);
      expect(r.err).to.match(/conflict/i);
      await ok(
        ['apply', '--server-side', '--force-conflicts', '--field-manager=azure-cns', '-f', '-'],
        NNC_YAML(8),
      );
      const obj = JSON.parse(
        await ok([
          'get',
          'nnc',
          'node-1',
          '-n',
          'kube-system',
          '-o',
          'json',
          '--show-managed-fields',
        ]),
      ) as {
        spec: { requestedIPCount: number };
        metadata: { managedFields: { manager: string; operation: string }[] };
      };
      expect(obj.spec.requestedIPCount).to.equal(8);
      expect(
        obj.metadata.managedFields.some(
          (m) => m.manager === 'azure-cns' && m.operation === 'Apply',
        ),
      ).to.equal(true);
    });

    it('get -w prints the changes as they happen', async () => {
      const child = spawn(bin, [
        '--kubeconfig',
        server.kubeconfigPath,
        '--cache-dir',
        cache,
        'get',
        'nnc',
        '-n',
        'kube-system',
        '-w',
      ]);
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const waitFor = async (re: RegExp): Promise<void> => {
        for (let i = 0; i < 100 && !re.test(out); i++) await new Promise((r) => setTimeout(r, 50));
      };
      await waitFor(/node-1\s+8/);
      await ok([
        'patch',
        'nnc',
        'node-1',
        '-n',
        'kube-system',
        '--type=merge',
        '-p',
        '{"spec":{"requestedIPCount":77}}',
      ]);
      await waitFor(/node-1\s+77/);
      child.kill('SIGTERM');
      expect(out).to.match(/node-1\s+8/);
      expect(out).to.match(/node-1\s+77/);
    });

    it('pods: apply, strategic merge patch by container name, describe, delete', async () => {
      await ok(['apply', '-f', '-'], POD_YAML);
      await ok(['apply', '-f', '-'], POD_YAML.replace('nginx:1', 'nginx:2'));
      await ok([
        'patch',
        'pod',
        'web',
        '-p',
        '{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}',
      ]);
      const pod = JSON.parse(await ok(['get', 'pod', 'web', '-o', 'json'])) as {
        spec: { containers: { name: string; image: string }[] };
      };
      expect(pod.spec.containers.map((c) => `${c.name}=${c.image}`)).to.deep.equal([
        'app=nginx:2',
        'side=busybox:2',
      ]);
      expect(
        await ok(['get', 'pods', '--field-selector', 'spec.nodeName=node-1', '-o', 'name']),
      ).to.match(/pod\/web/);
      expect(await ok(['describe', 'pod', 'web'])).to.match(/Image:\s+busybox:2/);
      expect(await ok(['delete', 'pod', 'web'])).to.match(/deleted/);
      expect((await kubectl(['get', 'pod', 'web'])).err).to.match(/NotFound|not found/);
    });

    it('nodes, leases, events and namespaces work the same way', async () => {
      await ok(
        ['apply', '-f', '-'],
        'apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n  labels: {role: worker}\n',
      );
      expect(await ok(['get', 'nodes'])).to.match(/node-1/);
      expect(await ok(['describe', 'node', 'node-1'])).to.match(/Name:\s+node-1/);
      await ok(
        ['apply', '-f', '-'],
        'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: node-1\n  namespace: kube-node-lease\nspec:\n  holderIdentity: node-1\n',
      );
      expect(await ok(['get', 'lease', '-n', 'kube-node-lease'])).to.match(/node-1\s+node-1/);
      await ok(
        ['create', '-f', '-'],
        'apiVersion: v1\nkind: Event\nmetadata:\n  name: e1\n  namespace: kube-system\ninvolvedObject: {kind: NodeNetworkConfig, name: node-1, namespace: kube-system}\nreason: Scaled\nmessage: pool scaled\ntype: Normal\n',
      );
      expect(await ok(['get', 'events', '-n', 'kube-system'])).to.match(/Scaled/);
      // (`kubectl create namespace` sends protobuf, which this server does not decode: use apply.)
      await ok(
        ['apply', '-f', '-'],
        'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: scratch\n',
      );
      expect(await ok(['get', 'ns', 'scratch'])).to.match(/scratch\s+Active/);
      await ok(['delete', 'ns', 'scratch']);
      await ok(['label', 'node', 'node-1', 'zone=z1']);
      expect(await ok(['get', 'nodes', '-l', 'zone=z1', '-o', 'name'])).to.match(/node\/node-1/);
      await ok(['delete', 'node', 'node-1']);
    });

    it('delete of the NNC and the CRDs', async () => {
      await ok(['delete', 'nnc', 'node-1', '-n', 'kube-system']);
      await ok(['delete', '-k', CRDS_DIR]);
      const r = await kubectl(['get', 'crd', '-o', 'name']);
      expect(r.out).to.not.match(/acn.azure.com/);
    });
  });
}
