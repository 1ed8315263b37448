// The node agent's lean use of @kubernetes/client-node (docs/decisions/0026):
// with the hook registered, a KubeConfig, the watch classes and the lean API
// clients load without the package's index of every API group, and the lean
// clients make the same calls as the package's own (here against the local
// API server: a list, an Event created and replaced, a server-side apply).
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { CRDS_DIR } from '../support/wait.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Runs in a fresh process: which client-node files it loaded, and what the calls returned.
const SCRIPT = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, ctx, next) { if (url.includes('client-node/dist/')) loaded.push(url.split('client-node/dist/')[1]); return next(url, ctx); } });
const { useLeanKubeClient } = await import('./src/kube/lean/hooks.ts');
if (process.env.LEAN === '1') useLeanKubeClient();
const { loadKubeConfig } = await import('./src/kube/config.ts');
await import('./src/kube/watch.ts');
const { LeanCoreV1Api, LeanCustomObjectsApi } = await import('./src/kube/lean/apis.ts');
const { setHeaderOptions } = await import('@kubernetes/client-node/dist/middleware.js');
const { kc } = loadKubeConfig({ kubeconfig: process.env.KC, env: {} });
const core = kc.makeApiClient(LeanCoreV1Api);
const objects = kc.makeApiClient(LeanCustomObjectsApi);
const pods = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1' });
const body = { metadata: { name: process.env.EV, namespace: 'default' }, involvedObject: { kind: 'Pod', name: 'p' }, reason: 'R', message: 'm', type: 'Normal' };
const created = await core.createNamespacedEvent({ namespace: 'default', body });
const replaced = await core.replaceNamespacedEvent({ name: process.env.EV, namespace: 'default', body: { ...created, message: 'm2' } });
const nnc = { apiVersion: 'acn.azure.com/v1alpha', kind: 'NodeNetworkConfig', metadata: { name: 'n1', namespace: 'kube-system' }, spec: { requestedIPCount: 16 } };
const coords = { group: 'acn.azure.com', version: 'v1alpha', namespace: 'kube-system', plural: 'nodenetworkconfigs' };
const applied = await objects.patchNamespacedCustomObject({ ...coords, name: 'n1', body: nnc, fieldManager: 'test', force: true }, setHeaderOptions('Content-Type', 'application/apply-patch+yaml'));
const list = await objects.listNamespacedCustomObject(coords);
let refused;
try { await core.replaceNamespacedEvent({ name: 'nope', namespace: 'default', body }); } catch (err) { refused = err.code; }
console.log(JSON.stringify({ loaded, pods: pods.items.length, podsKind: pods.constructor.name, created: created.message, timestamp: created.metadata.creationTimestamp instanceof Date, replaced: replaced.message, applied: applied.spec.requestedIPCount, listed: list.items.length, refused }));
`;

describe('the lean Kubernetes client of the node agent', function () {
  this.timeout(60_000);
  let server: ApiServer;
  before(async () => {
    server = await startApiServer({ crdsDir: CRDS_DIR });
  });
  after(async () => {
    await server.close();
  });

  const probe = async (lean: boolean): Promise<Record<string, unknown>> => {
    const { stdout } = await run(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', SCRIPT],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          KC: server.kubeconfigPath,
          LEAN: lean ? '1' : '0',
          EV: lean ? 'lean' : 'full',
        },
      },
    );
    return JSON.parse(stdout.trim().split('\n').at(-1) as string) as Record<string, unknown>;
  };

  it('loads no generated wrapper of every API group, yet makes the same calls', async () => {
    const full = await probe(false);
    const lean = await probe(true);
    const loadedFull = full.loaded as string[];
    const loadedLean = lean.loaded as string[];
    expect(loadedFull).to.include('gen/types/ObservableAPI.js');
    expect(loadedLean.filter((f) => f.startsWith('gen/types/'))).to.deep.equal([]);
    expect(
      loadedLean.filter((f) => f.startsWith('gen/apis/') && f.endsWith('Api.js')),
    ).to.have.members(['gen/apis/CoreV1Api.js', 'gen/apis/CustomObjectsApi.js']);
    const { loaded: _a, ...callsFull } = full;
    const { loaded: _b, ...callsLean } = lean;
    expect(callsLean).to.deep.equal(callsFull);
    expect(callsLean).to.include({
      podsKind: 'V1PodList',
      created: 'm',
      timestamp: true,
      replaced: 'm2',
      applied: 16,
      listed: 1,
      refused: 400, // the body's name is not the URL's: an ApiException, as from the package's own class
    });
  });
});
