// The deployable manifests: accepted by a Kubernetes API server through the
// real kubectl (1.27 and 1.33), and least privilege as the sidecar needs it.
import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startApiServer, type ApiServer } from '../../src/apiserver/server.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const MANIFESTS = join(ROOT, 'manifests');

function kubectlDir(): string {
  const which = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();
  return dirname(realpathSync(which));
}

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

function docs(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(MANIFESTS, file), 'utf8')).map(
    (d) => d.toJS() as Record<string, unknown>,
  );
}

describe('manifests', () => {
  it('grant the sidecar exactly what it uses, nothing else', () => {
    const grants = new Map<string, string[]>();
    for (const doc of docs('sidecar/rbac.yaml')) {
      for (const rule of (doc.rules as Rule[] | undefined) ?? []) {
        for (const group of rule.apiGroups) {
          for (const resource of rule.resources) {
            const key = `${group || 'core'}/${resource}`;
            grants.set(key, [...(grants.get(key) ?? []), ...rule.verbs].sort());
          }
        }
      }
    }
    expect(Object.fromEntries(grants)).to.deep.equal({
      'core/pods': ['get', 'list', 'watch'],
      'acn.azure.com/nodenetworkconfigs': ['get', 'list', 'patch', 'watch'],
      'acn.azure.com/clustersubnetstates': ['get', 'list', 'watch'],
      'core/events': ['create', 'patch'],
    });
  });

  it('run the sidecar non-root, read-only, with probes, limits and NODENAME from the downward API', () => {
    const [ds] = docs('sidecar/daemonset.yaml') as [
      { spec: { template: { spec: Record<string, unknown> } } },
    ];
    const pod = ds.spec.template.spec as {
      securityContext: { runAsNonRoot: boolean };
      containers: {
        args: string[];
        env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
        livenessProbe: { httpGet: { path: string } };
        readinessProbe: { httpGet: { path: string } };
        resources: { requests: object; limits: object };
        securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean };
      }[];
      volumes: { name: string; hostPath?: { path: string } }[];
    };
    const [c] = pod.containers;
    expect(pod.securityContext.runAsNonRoot).to.equal(true);
    expect(c?.args[0]).to.equal('sidecar');
    expect(c?.env.find((e) => e.name === 'NODENAME')?.valueFrom?.fieldRef?.fieldPath).to.equal(
      'spec.nodeName',
    );
    expect(c?.livenessProbe.httpGet.path).to.equal('/healthz');
    expect(c?.readinessProbe.httpGet.path).to.equal('/readyz');
    expect(c?.resources.requests).to.not.be.empty;
    expect(c?.resources.limits).to.not.be.empty;
    expect(c?.securityContext.readOnlyRootFilesystem).to.equal(true);
    expect(c?.securityContext.allowPrivilegeEscalation).to.equal(false);
    expect(pod.volumes.some((v) => v.hostPath !== undefined)).to.equal(true);
  });

  for (const version of ['1.27', '1.33']) {
    describe(`applied with kubectl ${version}`, () => {
      let server: ApiServer;
      // Asynchronous: the API server runs in this process and must keep serving.
      let kubectl: (...args: string[]) => Promise<string>;

      before(async () => {
        server = await startApiServer({ port: 0 });
        const bin = join(kubectlDir(), `kubectl.${version}`);
        kubectl = async (...args) =>
          (
            await promisify(execFile)(bin, [`--server=${server.url}`, ...args], {
              encoding: 'utf8',
              timeout: 60_000,
            })
          ).stdout;
      });

      after(() => server.close());

      it('accepts every object of the kustomization, and a second apply changes nothing', async () => {
        const first = await kubectl('apply', '-k', MANIFESTS);
        for (const expected of [
          'customresourcedefinition.apiextensions.k8s.io/nodenetworkconfigs.acn.azure.com created',
          'customresourcedefinition.apiextensions.k8s.io/clustersubnetstates.acn.azure.com created',
          'serviceaccount/pool-monitor created',
          'clusterrole.rbac.authorization.k8s.io/pool-monitor created',
          'clusterrolebinding.rbac.authorization.k8s.io/pool-monitor created',
          'role.rbac.authorization.k8s.io/pool-monitor created',
          'rolebinding.rbac.authorization.k8s.io/pool-monitor created',
          'daemonset.apps/pool-monitor created',
          'validatingadmissionpolicy.admissionregistration.k8s.io/pool-monitor-sidecar-own-nnc created',
          'validatingadmissionpolicybinding.admissionregistration.k8s.io/pool-monitor-sidecar-own-nnc created',
        ]) {
          expect(first).to.contain(expected);
        }
        const second = await kubectl('apply', '-k', MANIFESTS);
        expect(second).to.not.contain('created');
        const names = await kubectl('get', 'ds,sa,role,rolebinding', '-n', 'kube-system', '-o', 'name');
        expect(names.split('\n').filter(Boolean).sort()).to.deep.equal([
          'daemonset.apps/pool-monitor',
          'role.rbac.authorization.k8s.io/pool-monitor',
          'rolebinding.rbac.authorization.k8s.io/pool-monitor',
          'serviceaccount/pool-monitor',
        ]);
        // The CRDs it installed serve NodeNetworkConfigs right away.
        expect(await kubectl('get', 'nnc', '-n', 'kube-system')).to.not.contain('error');
      });
    });
  }
});
