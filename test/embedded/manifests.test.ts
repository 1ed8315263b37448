// The embedded cluster's reader of manifests/: the objects `kubectl apply -k`
// would send (the subset of kustomize manifests/ uses), what it applies, and
// the service account each component's workload runs as.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { accessObjects, serviceAccountOf } from '../../harness/embedded/access.ts';
import {
  inNamespace,
  isNamespaced,
  MANIFESTS_DIR,
  readInstall,
  readKustomization,
  type ManifestObject,
} from '../../harness/embedded/manifests.ts';

/** kubectl 1.33 (it has kustomize built in), when the machine has it. */
function kubectl133(): string | undefined {
  try {
    const which = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();
    const bin = join(dirname(realpathSync(which)), 'kubectl.1.33');
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

/** JSON with sorted keys. */
const stable = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(stable).join(',')}]`
    : v !== null && typeof v === 'object'
      ? `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(v);

/** Objects as comparable text, in one order. */
const canonical = (objects: unknown[]): string[] => objects.map(stable).sort();

const names = (objects: ManifestObject[]): string[] =>
  objects.map(
    (o) => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`,
  );

describe('embedded: manifests/ as kustomize reads it', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'manifests-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string): void => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  };

  it('reads manifests/: what it applies, in apply order, and not the workloads', () => {
    // The top kustomization holds no CRD: deleting it must never delete them.
    expect(readKustomization().map((o) => o.kind)).to.not.include('CustomResourceDefinition');
    const all = readInstall();
    expect(all.map((o) => o.kind)).to.include.members(['DaemonSet', 'Deployment']);
    expect(names(accessObjects(all))).to.deep.equal([
      'CustomResourceDefinition/nodenetworkconfigs.acn.azure.com',
      'CustomResourceDefinition/clustersubnetstates.acn.azure.com',
      'ServiceAccount/kube-system/pool-monitor',
      'ServiceAccount/kube-system/pool-monitor-fulfiller',
      'ClusterRole/pool-monitor',
      'ClusterRole/pool-monitor-fulfiller',
      'Role/kube-system/pool-monitor',
      'Role/kube-system/pool-monitor-fulfiller',
      'ClusterRoleBinding/pool-monitor',
      'ClusterRoleBinding/pool-monitor-fulfiller',
      'RoleBinding/kube-system/pool-monitor',
      'RoleBinding/kube-system/pool-monitor-fulfiller',
      'ValidatingAdmissionPolicy/pool-monitor-sidecar-own-nnc',
      'ValidatingAdmissionPolicy/pool-monitor-sidecar-own-events',
      'ValidatingAdmissionPolicy/pool-monitor-sidecar-own-node-taint',
      'ValidatingAdmissionPolicy/pool-monitor-fulfiller-node-restore',
      'ValidatingAdmissionPolicyBinding/pool-monitor-sidecar-own-nnc',
      'ValidatingAdmissionPolicyBinding/pool-monitor-sidecar-own-events',
      'ValidatingAdmissionPolicyBinding/pool-monitor-sidecar-own-node-taint',
      'ValidatingAdmissionPolicyBinding/pool-monitor-fulfiller-node-restore',
    ]);
    expect(serviceAccountOf(all, 'sidecar')).to.deep.equal({
      namespace: 'kube-system',
      name: 'pool-monitor',
    });
    expect(serviceAccountOf(all, 'fulfiller')).to.deep.equal({
      namespace: 'kube-system',
      name: 'pool-monitor-fulfiller',
    });
  });

  it('gives exactly what `kubectl kustomize manifests/` renders', function () {
    const bin = kubectl133();
    if (!bin) this.skip();
    const rendered = parseAllDocuments(
      execFileSync(bin, ['kustomize', MANIFESTS_DIR], { encoding: 'utf8' }),
    ).map((d) => {
      const o = d.toJS() as ManifestObject;
      // kustomize's schema predates ValidatingAdmissionPolicy (GA in 1.30) and
      // namespaces it; the API server drops a namespace from cluster-scoped objects.
      if (!isNamespaced(o.kind)) delete o.metadata.namespace;
      return o;
    });
    expect(canonical(readKustomization())).to.deep.equal(canonical(rendered));
  });

  it('follows nested kustomizations and sets the namespace as kustomize does', function () {
    write('kustomization.yaml', 'resources: [app]\nnamespace: team\n');
    write('app/kustomization.yaml', 'resources: [sa.yaml, rbac.yaml]\n');
    write('app/sa.yaml', 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: agent}\n');
    write(
      'app/rbac.yaml',
      [
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: ClusterRoleBinding',
        'metadata: {name: agent}',
        'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}',
        'subjects:',
        '  - {kind: ServiceAccount, name: agent}',
        '  - {kind: ServiceAccount, name: agent, namespace: elsewhere}',
        '  - {kind: ServiceAccount, name: default, namespace: elsewhere}',
        '  - {kind: ServiceAccount, name: stranger}',
        '  - {kind: User, name: alice}',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata: {name: agent, namespace: old}',
        'rules: []',
        '',
      ].join('\n'),
    );
    const objects = readKustomization(dir);
    expect(names(objects)).to.deep.equal([
      'ServiceAccount/team/agent',
      'ClusterRoleBinding/agent',
      'Role/team/agent',
    ]);
    // (What kubectl 1.33's kustomize renders: see below.)
    expect(objects[1]!.subjects).to.deep.equal([
      { kind: 'ServiceAccount', name: 'agent', namespace: 'team' },
      { kind: 'ServiceAccount', name: 'agent', namespace: 'elsewhere' },
      { kind: 'ServiceAccount', name: 'default', namespace: 'team' },
      { kind: 'ServiceAccount', name: 'stranger' },
      { kind: 'User', name: 'alice' },
    ]);
    const bin = kubectl133();
    if (!bin) this.skip();
    const rendered = parseAllDocuments(
      execFileSync(bin, ['kustomize', dir], { encoding: 'utf8' }),
    ).map((d) => d.toJS() as unknown);
    expect(canonical(objects)).to.deep.equal(canonical(rendered));
  });

  it('sets the images as kustomize does', function () {
    write(
      'kustomization.yaml',
      [
        'resources: [ds.yaml]',
        'images:',
        '  - {name: app, newName: registry.example.com/team/app, newTag: "2.0"}',
        '  - {name: helper, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}',
        '  - {name: registry:5000/tool, newTag: v3}',
        '',
      ].join('\n'),
    );
    write(
      'ds.yaml',
      [
        'apiVersion: apps/v1',
        'kind: DaemonSet',
        'metadata: {name: ds}',
        'spec:',
        '  template:',
        '    spec:',
        '      initContainers: [{name: i, image: "helper:1"}]',
        '      containers:',
        '        - {name: a, image: "app:1.0"}',
        '        - {name: b, image: app}',
        '        - {name: c, image: "registry:5000/tool:v1"}',
        '        - {name: d, image: "other:1"}',
        '',
      ].join('\n'),
    );
    const [ds] = readKustomization(dir) as unknown as [
      { spec: { template: { spec: Record<string, { image: string }[]> } } },
    ];
    const pod = ds.spec.template.spec;
    expect(pod.containers!.map((c) => c.image)).to.deep.equal([
      'registry.example.com/team/app:2.0',
      'registry.example.com/team/app:2.0',
      'registry:5000/tool:v3',
      'other:1',
    ]);
    expect(pod.initContainers![0]!.image).to.equal(
      'helper@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    );
    const bin = kubectl133();
    if (!bin) this.skip();
    const rendered = parseAllDocuments(
      execFileSync(bin, ['kustomize', dir], { encoding: 'utf8' }),
    ).map((d) => d.toJS() as unknown);
    expect(canonical(readKustomization(dir))).to.deep.equal(canonical(rendered));
  });

  it('refuses what it cannot read with a clear error', () => {
    write('kustomization.yaml', 'resources: [a.yaml]\npatches: [{path: p.yaml}]\n');
    expect(() => readKustomization(dir)).to.throw(
      /kustomization.yaml: "patches" is not supported by the embedded cluster's reader/,
    );
    write('kustomization.yaml', 'resources: [missing.yaml]\n');
    expect(() => readKustomization(dir)).to.throw(/resource missing.yaml not found/);
    write('kustomization.yaml', 'resources: [sub]\n');
    mkdirSync(join(dir, 'sub'));
    expect(() => readKustomization(dir)).to.throw(/sub: no kustomization.yaml/);
    write('kustomization.yaml', 'resources: [bad.yaml]\n');
    write('bad.yaml', 'kind: ConfigMap\nmetadata: {}\n');
    expect(() => readKustomization(dir)).to.throw(
      /bad.yaml: an object without kind or metadata.name/,
    );
    write('bad.yaml', 'kind: [\n');
    expect(() => readKustomization(dir)).to.throw(/bad.yaml: /);
  });

  it('finds each component by the command its workload runs', () => {
    const workload = (kind: string, command: string, sa?: string): ManifestObject => ({
      apiVersion: 'apps/v1',
      kind,
      metadata: { name: command, namespace: 'ns' },
      spec: {
        template: {
          spec: { ...(sa ? { serviceAccountName: sa } : {}), containers: [{ args: [command] }] },
        },
      },
    });
    expect(serviceAccountOf([workload('DaemonSet', 'sidecar', 'a')], 'sidecar')).to.deep.equal({
      namespace: 'ns',
      name: 'a',
    });
    expect(() => serviceAccountOf([], 'fulfiller')).to.throw(
      /expected one workload running "fulfiller", found 0/,
    );
    expect(() => serviceAccountOf([workload('Deployment', 'fulfiller')], 'fulfiller')).to.throw(
      /Deployment fulfiller: no serviceAccountName/,
    );
  });

  it('leaves cluster-scoped objects out of the namespace', () => {
    const [crb] = inNamespace(
      [{ apiVersion: 'v1', kind: 'ClusterRole', metadata: { name: 'x' } }],
      'team',
    );
    expect(crb!.metadata).to.deep.equal({ name: 'x' });
  });
});
