// The deployable manifests: accepted by a Kubernetes API server through the
// real kubectl (1.27 and 1.33), base and Azure overlay; least privilege as
// the sidecar and the fulfiller need it; pods hardened.
import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { CoreV1Api } from '@kubernetes/client-node';
import type { AuthorizationRecord } from '../../harness/apiserver/auth/decisions.ts';
import { accessObjects, serviceAccountOf } from '../../harness/embedded/access.ts';
import { readKustomization } from '../../harness/embedded/manifests.ts';
import { KUBECTL_VERSIONS, mustKubectl } from '../support/kubectl.ts';
import { grants, rulesOf, strictCluster, unusedGrants } from '../support/rbac.ts';
import { azureSettingsFromFlags } from '../../src/cli/azure-options.ts';
import type { AzureSettings } from '../../src/azure/settings.ts';
import { fulfillerCommand } from '../../src/cli/fulfiller.ts';

/** What `bin/pool-monitor fulfiller ARGS` makes of its Azure flags with these variables set. */
async function azureSettingsOf(
  args: string[],
  env: { name: string; value?: string }[],
): Promise<AzureSettings> {
  const saved = { ...process.env };
  for (const e of env) if (e.value !== undefined) process.env[e.name] = e.value;
  try {
    let flags: Record<string, unknown> = {};
    const command = fulfillerCommand()
      .exitOverride()
      .action((f: Record<string, unknown>) => {
        flags = f;
      });
    await command.parseAsync(args, { from: 'user' });
    expect(flags.backend).to.equal('azure');
    return azureSettingsFromFlags(flags);
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

const ROOT = new URL('../../', import.meta.url).pathname;
const MANIFESTS = join(ROOT, 'manifests');
const AZURE = join(MANIFESTS, 'azure');

function docs(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(MANIFESTS, file), 'utf8')).map(
    (d) => d.toJS() as Record<string, unknown>,
  );
}

interface Container {
  name: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: number } };
  readinessProbe: { httpGet: { path: string; port: number } };
  resources: { requests: object; limits: object };
  securityContext: {
    readOnlyRootFilesystem: boolean;
    allowPrivilegeEscalation: boolean;
    capabilities: { drop: string[] };
  };
}
interface PodSpec {
  serviceAccountName: string;
  hostNetwork?: boolean;
  securityContext: { runAsNonRoot: boolean };
  containers: Container[];
  volumes: { name: string; hostPath?: { path: string } }[];
  affinity?: { podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: unknown[] } };
}
interface Workload {
  kind: string;
  metadata: { name: string };
  spec: { replicas?: number; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}

describe('manifests', () => {
  it('grant the sidecar exactly what it uses, nothing else', () => {
    expect(grants(rulesOf(join(MANIFESTS, 'sidecar/rbac.yaml')))).to.deep.equal({
      // Informers list and watch; the one object it gets is its own Node (make rbac-audit).
      'core/pods': ['list', 'watch'],
      // The schedule signal: its taint on its own Node (node-taint-policy.yaml).
      'core/nodes': ['get', 'patch'],
      'acn.azure.com/nodenetworkconfigs': ['list', 'patch', 'watch'],
      'acn.azure.com/clustersubnetstates': ['list', 'watch'],
      // The Event recorder updates repeated Events with PUT.
      'core/events': ['create', 'update'],
    });
  });

  it('grant the fulfiller exactly what it uses, nothing else', () => {
    // The fulfiller's first grant list less what `make rbac-audit` showed it never uses: get
    // nodes, patch NNC status, get/list/watch ClusterSubnetStates.
    // Patch nodes: a Node carries the addresses of an NNC let go under it (node-restore.ts).
    expect(grants(rulesOf(join(MANIFESTS, 'fulfiller/rbac.yaml')))).to.deep.equal({
      'core/nodes': ['list', 'patch', 'watch'],
      'core/pods': ['list'],
      'acn.azure.com/nodenetworkconfigs': ['create', 'delete', 'get', 'list', 'patch', 'watch'],
      'acn.azure.com/nodenetworkconfigs/status': ['update'],
      'acn.azure.com/clustersubnetstates': ['create'],
      'acn.azure.com/clustersubnetstates/status': ['patch'],
      'coordination.k8s.io/leases': ['create'],
      'coordination.k8s.io/leases[pool-monitor-fulfiller]': ['get', 'list', 'update', 'watch'],
      'core/events': ['create', 'update'],
    });
    // Namespaced grants are in a Role of the namespace, not cluster-wide.
    const [clusterRole, , role] = docs('fulfiller/rbac.yaml') as [
      { kind: string; rules: { resources: string[] }[] },
      unknown,
      { kind: string; metadata: { namespace: string } },
    ];
    expect(clusterRole.kind).to.equal('ClusterRole');
    expect(clusterRole.rules.flatMap((r) => r.resources)).to.deep.equal(['nodes', 'pods']);
    expect(role).to.deep.include({ kind: 'Role' });
    expect(role.metadata.namespace).to.equal('kube-system');
  });

  it('run the sidecar non-root, read-only, with probes, limits and NODENAME from the downward API', () => {
    const [ds] = docs('sidecar/daemonset.yaml') as unknown as [Workload];
    const pod = ds.spec.template.spec;
    const [c] = pod.containers;
    expect(pod.securityContext.runAsNonRoot).to.equal(true);
    expect(c?.args[0]).to.equal('sidecar');
    expect(c?.env.find((e) => e.name === 'NODENAME')?.valueFrom?.fieldRef?.fieldPath).to.equal(
      'spec.nodeName',
    );
    expect(c?.livenessProbe.httpGet.path).to.equal('/healthz');
    expect(c?.readinessProbe.httpGet.path).to.equal('/readyz');
    // The probes go where --health-listen serves them: the node API is a socket.
    for (const probe of [c!.livenessProbe, c!.readinessProbe])
      expect(c?.args).to.include(`--health-listen=127.0.0.1:${probe.httpGet.port}`);
    expect(c?.resources.requests).to.not.be.empty;
    expect(c?.resources.limits).to.not.be.empty;
    expect(c?.securityContext.readOnlyRootFilesystem).to.equal(true);
    expect(c?.securityContext.allowPrivilegeEscalation).to.equal(false);
    expect(pod.volumes.some((v) => v.hostPath !== undefined)).to.equal(true);
  });

  it('run the fulfiller as 2 replicas on different nodes, non-root, read-only, probed, listening on 0.0.0.0:10093', () => {
    const [deploy] = docs('fulfiller/deployment.yaml') as unknown as [Workload];
    expect(deploy.kind).to.equal('Deployment');
    expect(deploy.spec.replicas).to.equal(2);
    const pod = deploy.spec.template.spec;
    expect(pod.serviceAccountName).to.equal('pool-monitor-fulfiller');
    expect(pod.securityContext.runAsNonRoot).to.equal(true);
    expect(pod.hostNetwork).to.equal(true);
    expect(pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution).to.have.length(1);
    const [c] = pod.containers;
    expect(c!.args).to.include.members(['fulfiller', '--listen=0.0.0.0:10093']);
    expect(c!.args).to.not.include('--leader-elect=false');
    expect(c!.env.find((e) => e.name === 'POD_NAME')?.valueFrom?.fieldRef?.fieldPath).to.equal(
      'metadata.name',
    );
    expect(c!.livenessProbe.httpGet).to.deep.equal({ path: '/healthz', port: 10093 });
    expect(c!.readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 10093 });
    expect(c!.resources.requests).to.have.keys('cpu', 'memory');
    expect(c!.resources.limits).to.have.keys('cpu', 'memory');
    expect(c!.securityContext).to.deep.equal({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('run the image the kustomization names, which an overlay overrides with images:', () => {
    const kustomization = parseAllDocuments(
      readFileSync(join(MANIFESTS, 'kustomization.yaml'), 'utf8'),
    )[0]!.toJS() as { images: { name: string; newName: string; newTag: string }[] };
    const [ds] = docs('sidecar/daemonset.yaml') as [
      { spec: { template: { spec: { containers: { image: string }[] } } } },
    ];
    const image = ds.spec.template.spec.containers[0]!.image;
    expect(kustomization.images.map((i) => i.name)).to.include(image.split(':')[0]);
    // A user's overlay, as the README says: their registry and tag.
    const overlay = mkdtempSync(join(tmpdir(), 'overlay-'));
    try {
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        [
          'resources:',
          `  - ${relative(overlay, MANIFESTS)}`, // kustomize wants it relative
          'images:',
          '  - name: ipam-pool-monitor',
          '    newName: registry.example.com/platform/ipam-pool-monitor',
          '    newTag: 1.2.3',
          '',
        ].join('\n'),
      );
      const bin = mustKubectl('1.33');
      const out = execFileSync(bin, ['kustomize', overlay], { encoding: 'utf8' });
      const images = [...out.matchAll(/^\s+image: (\S+)$/gm)].map((m) => m[1]);
      expect(images).to.include('registry.example.com/platform/ipam-pool-monitor:1.2.3');
      // Every container (the sidecar, its init containers owning the state
      // dir, installing the CNI plugin and writing the node API's token and
      // the conflist, the fulfiller) runs it: no other image to mirror, and
      // nothing runs the default any more.
      expect(images).to.deep.equal(
        Array(5).fill('registry.example.com/platform/ipam-pool-monitor:1.2.3'),
      );
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });

  it('audit: names every grant of a service account no allowed request used', () => {
    const all = readKustomization();
    const sa = serviceAccountOf(all, 'sidecar');
    const used = (verb: string, apiGroup: string, resource: string, name = ''): AuthorizationRecord => ({
      user: 'system:serviceaccount:kube-system:pool-monitor',
      verb,
      apiGroup,
      resource,
      namespace: resource === 'pods' || resource === 'nodes' ? '' : 'kube-system',
      name,
      path: '',
      allowed: true,
      count: 1,
    });
    const everything = [
      used('list', '', 'pods'),
      used('watch', '', 'pods'),
      used('list', 'acn.azure.com', 'nodenetworkconfigs', 'n-0'),
      used('watch', 'acn.azure.com', 'nodenetworkconfigs', 'n-0'),
      used('patch', 'acn.azure.com', 'nodenetworkconfigs', 'n-0'),
      used('list', 'acn.azure.com', 'clustersubnetstates'),
      used('watch', 'acn.azure.com', 'clustersubnetstates'),
      used('create', '', 'events'),
      used('update', '', 'events', 'n-0.1'),
      used('get', '', 'nodes', 'n-0'),
      used('patch', '', 'nodes', 'n-0'),
    ];
    expect(unusedGrants(accessObjects(all), sa, everything)).to.deep.equal([]);
    // Another user's requests, a refused one, or one in another namespace use nothing of it.
    const notMine = [
      { ...used('update', '', 'events', 'n-0.1'), user: 'someone' },
      { ...used('patch', 'acn.azure.com', 'nodenetworkconfigs', 'n-0'), allowed: false },
      { ...used('list', 'acn.azure.com', 'clustersubnetstates'), namespace: 'default' },
    ];
    expect(
      unusedGrants(accessObjects(all), sa, [
        ...everything.slice(0, 4),
        ...everything.slice(6, 8),
        ...everything.slice(9),
        ...notMine,
      ]),
    ).to.deep.equal([
      'patch acn.azure.com/nodenetworkconfigs (Role/pool-monitor)',
      'list acn.azure.com/clustersubnetstates (Role/pool-monitor)',
      'update core/events (Role/pool-monitor)',
    ]);
  });

  it('the strict cluster of the tests refuses what manifests/ does not grant, and close() says so', async () => {
    const cluster = await strictCluster();
    const sidecar = (await cluster.sidecarKubeConfig('n-0')).makeApiClient(CoreV1Api);
    const err = await sidecar.listNode().catch((e: unknown) => e as { code?: number });
    expect((err as { code?: number }).code).to.equal(403);
    expect(cluster.refusals()).to.deep.equal(['sidecar: RBAC refused list core/nodes x1']);
    let closed: unknown;
    await cluster.close().catch((e: unknown) => (closed = e));
    expect(String(closed)).to.match(/refused what the product needs:\n {2}sidecar: RBAC refused list core\/nodes/);
  });

  for (const version of KUBECTL_VERSIONS) {
    describe(`applied with kubectl ${version}`, function () {
      this.timeout(90_000);
      let server: ApiServer;
      // Asynchronous: the API server runs in this process and must keep serving.
      let kubectl: (...args: string[]) => Promise<string>;

      before(async () => {
        server = await startApiServer({ port: 0 });
        const bin = mustKubectl(version);
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
        // The CRDs first and on their own (README, "Install").
        const crds = await kubectl('apply', '-k', join(MANIFESTS, 'crds'));
        expect(crds).to.contain(
          'customresourcedefinition.apiextensions.k8s.io/nodenetworkconfigs.acn.azure.com created',
        );
        expect(crds).to.contain(
          'customresourcedefinition.apiextensions.k8s.io/clustersubnetstates.acn.azure.com created',
        );
        const first = await kubectl('apply', '-k', MANIFESTS);
        expect(first).to.not.contain('customresourcedefinition');
        for (const expected of [
          'serviceaccount/pool-monitor created',
          'serviceaccount/pool-monitor-fulfiller created',
          'clusterrole.rbac.authorization.k8s.io/pool-monitor created',
          'clusterrole.rbac.authorization.k8s.io/pool-monitor-fulfiller created',
          'clusterrolebinding.rbac.authorization.k8s.io/pool-monitor created',
          'clusterrolebinding.rbac.authorization.k8s.io/pool-monitor-fulfiller created',
          'role.rbac.authorization.k8s.io/pool-monitor created',
          'role.rbac.authorization.k8s.io/pool-monitor-fulfiller created',
          'rolebinding.rbac.authorization.k8s.io/pool-monitor created',
          'rolebinding.rbac.authorization.k8s.io/pool-monitor-fulfiller created',
          'daemonset.apps/pool-monitor created',
          'validatingadmissionpolicy.admissionregistration.k8s.io/pool-monitor-sidecar-own-nnc created',
          'validatingadmissionpolicybinding.admissionregistration.k8s.io/pool-monitor-sidecar-own-nnc created',
          'validatingadmissionpolicy.admissionregistration.k8s.io/pool-monitor-sidecar-own-events created',
          'validatingadmissionpolicybinding.admissionregistration.k8s.io/pool-monitor-sidecar-own-events created',
          'validatingadmissionpolicy.admissionregistration.k8s.io/pool-monitor-fulfiller-node-restore created',
          'validatingadmissionpolicybinding.admissionregistration.k8s.io/pool-monitor-fulfiller-node-restore created',
          'deployment.apps/pool-monitor-fulfiller created',
        ]) {
          expect(first).to.contain(expected);
        }
        const second = await kubectl('apply', '-k', MANIFESTS);
        expect(second).to.not.contain('created');
        expect(second).to.not.contain('configured');
        const names = await kubectl(
          'get',
          'ds,deploy,sa,role,rolebinding',
          '-n',
          'kube-system',
          '-o',
          'name',
        );
        expect(names.split('\n').filter(Boolean).sort()).to.deep.equal([
          'daemonset.apps/pool-monitor',
          'deployment.apps/pool-monitor-fulfiller',
          'role.rbac.authorization.k8s.io/pool-monitor',
          'role.rbac.authorization.k8s.io/pool-monitor-fulfiller',
          'rolebinding.rbac.authorization.k8s.io/pool-monitor',
          'rolebinding.rbac.authorization.k8s.io/pool-monitor-fulfiller',
          'serviceaccount/pool-monitor',
          'serviceaccount/pool-monitor-fulfiller',
        ]);
        // The CRDs it installed serve NodeNetworkConfigs right away.
        expect(await kubectl('get', 'nnc', '-n', 'kube-system')).to.not.contain('error');
      });

      it('the Azure overlay switches the fulfiller to the Azure backend with workload identity', async () => {
        const out = await kubectl('apply', '-k', AZURE);
        expect(out).to.match(/deployment\.apps\/pool-monitor-fulfiller (configured|created)/);
        expect(out).to.match(/serviceaccount\/pool-monitor-fulfiller (configured|created)/);
        expect(await kubectl('apply', '-k', AZURE)).to.not.match(/configured|created/);
        const deploy = JSON.parse(
          await kubectl('get', 'deploy', 'pool-monitor-fulfiller', '-n', 'kube-system', '-o', 'json'),
        ) as Workload;
        const tpl = deploy.spec.template;
        expect(tpl.metadata.labels['azure.workload.identity/use']).to.equal('true');
        const c = tpl.spec.containers[0]!;
        expect(c.args).to.include.members(['fulfiller', '--backend=azure', '--listen=0.0.0.0:10093']);
        const env = Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));
        expect(env).to.include.keys(
          'AZURE_SUBSCRIPTION_ID',
          'AZURE_RESOURCE_GROUP',
          'AZURE_POD_SUBNET_ID',
          'POD_NAME',
        );
        expect(String(env.AZURE_POD_SUBNET_ID)).to.match(
          /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/,
        );
        // The fulfiller's own command line takes these args, and these variables
        // as its --azure-* fallbacks, into valid Azure settings.
        const settings = await azureSettingsOf(c.args.slice(1), c.env);
        expect(settings).to.include({
          subscriptionId: env.AZURE_SUBSCRIPTION_ID,
          resourceGroup: env.AZURE_RESOURCE_GROUP,
          podSubnetId: env.AZURE_POD_SUBNET_ID,
          qps: 4,
          burst: 20,
        });
        expect(settings).to.not.have.property('tokenFile'); // DefaultAzureCredential: workload identity
        const sa = JSON.parse(
          await kubectl('get', 'sa', 'pool-monitor-fulfiller', '-n', 'kube-system', '-o', 'json'),
        ) as { metadata: { annotations?: Record<string, string> } };
        expect(sa.metadata.annotations?.['azure.workload.identity/client-id']).to.match(
          /^[0-9a-f-]{36}$/,
        );
        // Hardening and the rest of the base are unchanged by the overlay.
        expect(tpl.spec.securityContext.runAsNonRoot).to.equal(true);
        expect(c.securityContext.readOnlyRootFilesystem).to.equal(true);
        expect(deploy.spec.replicas).to.equal(2);
      });

      it('deleting the workloads leaves the CRDs and every NNC (README, "Uninstall", step 1)', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'nnc-'));
        try {
          writeFileSync(
            join(dir, 'nnc.yaml'),
            [
              'apiVersion: acn.azure.com/v1alpha',
              'kind: NodeNetworkConfig',
              'metadata: { name: n-1, namespace: kube-system }',
              'spec: { requestedIPCount: 16 }',
              '',
            ].join('\n'),
          );
          await kubectl('apply', '-f', join(dir, 'nnc.yaml'));
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
        const out = await kubectl('delete', '-k', MANIFESTS);
        expect(out).to.contain('daemonset.apps "pool-monitor" deleted');
        expect(out).to.contain('deployment.apps "pool-monitor-fulfiller" deleted');
        expect(out).to.not.contain('customresourcedefinition');
        expect(await kubectl('get', 'nnc', '-n', 'kube-system', '-o', 'name')).to.contain(
          'nodenetworkconfig.acn.azure.com/n-1',
        );
        expect(await kubectl('get', 'crd', '-o', 'name')).to.contain(
          'customresourcedefinition.apiextensions.k8s.io/nodenetworkconfigs.acn.azure.com',
        );
      });

      it("the README's overlay sets the fulfiller's subnet by name, which the fulfiller reads", async () => {
        const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
        const text = /cat > deploy\/kustomization\.yaml <<'YAML'\n([\s\S]*?)\nYAML\n/.exec(readme)?.[1];
        expect(text, 'the overlay in README "Install"').to.be.a('string');
        const overlay = mkdtempSync(join(tmpdir(), 'deploy-'));
        try {
          writeFileSync(
            join(overlay, 'kustomization.yaml'),
            text!.replace('  - ../manifests', `  - ${relative(overlay, MANIFESTS)}`),
          );
          // The conflist it asks the DaemonSet to write, copied as the README says.
          const cp = /^mkdir -p deploy && cp (\S+) deploy\/(\S+)$/m.exec(readme);
          expect(cp, 'the cp of README "Install"').to.not.equal(null);
          copyFileSync(join(ROOT, cp![1]!), join(overlay, cp![2]!));
          const bin = mustKubectl(version);
          const rendered = parseAllDocuments(
            execFileSync(bin, ['kustomize', overlay], { encoding: 'utf8' }),
          ).map((d) => d.toJS() as Workload);
          // The generated ConfigMap (its name hashed) is the one the DaemonSet mounts.
          const cm = rendered.find((o) => o.kind === 'ConfigMap') as unknown as {
            metadata: { name: string; namespace: string };
            data: Record<string, string>;
          };
          expect(cm.metadata.namespace).to.equal('kube-system');
          expect(cm.data).to.deep.equal({
            [cp![2]!]: readFileSync(join(ROOT, cp![1]!), 'utf8'),
          });
          const ds = rendered.find((o) => o.kind === 'DaemonSet')!;
          const vol = ds.spec.template.spec.volumes.find((v) => v.name === 'cni-conflist') as {
            configMap?: { name: string; optional: boolean };
          };
          expect(vol.configMap).to.deep.equal({ name: cm.metadata.name, optional: true });
          const deploy = rendered.find((o) => o.kind === 'Deployment')!;
          const c = deploy.spec.template.spec.containers[0]!;
          // The base's args and other variables are all still there.
          expect(c.args).to.deep.equal([
            'fulfiller',
            '--namespace=$(POD_NAMESPACE)',
            '--listen=0.0.0.0:10093',
          ]);
          expect(c.env.map((e) => e.name)).to.include.members(['POD_NAME', 'POD_NAMESPACE']);
          const subnet = c.env.filter((e) => e.name === 'POOL_MONITOR_SUBNET');
          expect(subnet).to.deep.equal([{ name: 'POOL_MONITOR_SUBNET', value: '10.244.0.0/16' }]);
          let flags: Record<string, unknown> = {};
          const saved = process.env.POOL_MONITOR_SUBNET;
          process.env.POOL_MONITOR_SUBNET = subnet[0]!.value;
          try {
            await fulfillerCommand()
              .exitOverride()
              .action((f: Record<string, unknown>) => {
                flags = f;
              })
              .parseAsync(['--namespace=kube-system'], { from: 'user' });
          } finally {
            if (saved === undefined) delete process.env.POOL_MONITOR_SUBNET;
            else process.env.POOL_MONITOR_SUBNET = saved;
          }
          expect(flags.subnet).to.deep.equal(['10.244.0.0/16']);
        } finally {
          rmSync(overlay, { recursive: true, force: true });
        }
      });
    });
  }
});
