// The node agent's lean use of @kubernetes/client-node (docs/decisions/0026):
// with the hooks registered, a KubeConfig, the watch classes and the lean API
// clients load without the package's index of every API group, its request
// factories or its serializer and models, and the lean clients make the same
// calls as the package's own (here against the local API server: a list, an
// Event created and replaced, a server-side apply, a refused request), and a
// ListWatch with a field selector syncs. Answers are the server's JSON where
// the package gives model classes: compared as JSON, timestamps as instants.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestCluster, type TestCluster } from '../support/test-cluster.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Runs in a fresh process: which client-node files it loaded, and what the calls returned.
const SCRIPT = `
import { registerHooks } from 'node:module';
const loaded = [];
const undici = [];
registerHooks({ load(url, ctx, next) { if (url.includes('client-node/dist/')) loaded.push(url.split('client-node/dist/')[1]); if (url.includes('/node_modules/undici/')) undici.push(url.split('/node_modules/undici/')[1]); return next(url, ctx); } });
const { useLeanKubeClient } = await import('./src/kube/lean/hooks.ts');
if (process.env.LEAN === '1') useLeanKubeClient();
const { loadKubeConfig } = await import('./src/kube/config.ts');
const { watchResource } = await import('./src/kube/watch.ts');
const { createLogger } = await import('./src/log/logger.ts');
const { LeanCoreV1Api, LeanCustomObjectsApi } = await import('./src/kube/lean/apis.ts');
const { setHeaderOptions } = await import('./src/kube/client-node.ts');
const { kc, connections } = loadKubeConfig({ kubeconfig: process.env.KC, env: {} });
const core = kc.makeApiClient(LeanCoreV1Api);
const objects = kc.makeApiClient(LeanCustomObjectsApi);
const instant = (t) => (t instanceof Date ? t : new Date(t)).getTime();
const pods = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=n1' });
const body = { metadata: { name: process.env.EV, namespace: 'default' }, involvedObject: { kind: 'Pod', name: 'p' }, reason: 'R', message: 'm', type: 'Normal', count: 1, firstTimestamp: new Date(1_700_000_000_000) };
const created = await core.createNamespacedEvent({ namespace: 'default', body });
const replaced = await core.replaceNamespacedEvent({ name: process.env.EV, namespace: 'default', body: { ...created, message: 'm2', count: 2 } });
const { DEFAULT_NAMESPACE: NS, GROUP, NNC_KIND, NNC_PLURAL, NNC_VERSION, nncPath } = await import('./src/nnc/types.ts');
const nnc = { apiVersion: GROUP + '/' + NNC_VERSION, kind: NNC_KIND, metadata: { name: 'n1', namespace: NS }, spec: { requestedIPCount: 16 } };
const coords = { group: GROUP, version: NNC_VERSION, namespace: NS, plural: NNC_PLURAL };
const applied = await objects.patchNamespacedCustomObject({ ...coords, name: 'n1', body: nnc, fieldManager: 'test', force: true }, setHeaderOptions('Content-Type', 'application/apply-patch+yaml'));
const list = await objects.listNamespacedCustomObject({ ...coords, fieldSelector: 'metadata.name=n1' });
let refused;
try { await core.replaceNamespacedEvent({ name: 'nope', namespace: 'default', body }); } catch (err) { refused = { code: err.code, message: err.message.split('\\n')[1], reason: JSON.parse(err.body).reason }; }
let missing;
try { await core.createNamespacedEvent({ namespace: 'default' }); } catch (err) { missing = [err.name, err.message]; }
const watch = watchResource({ kc, path: nncPath(NS), fieldSelector: 'metadata.name=n1', listFn: () => objects.listNamespacedCustomObject({ ...coords, fieldSelector: 'metadata.name=n1' }), logger: createLogger({ level: 'error' }), name: 'nnc' });
await watch.whenSynced();
const watched = watch.list().map((o) => o.metadata.name);
await watch.stop();
await connections.destroy();
console.log(JSON.stringify({ loaded, undici, pods: pods.items.length, podsKind: pods.kind, created: created.message, count: created.count, first: instant(created.firstTimestamp), stamped: instant(created.metadata.creationTimestamp) > 0, replaced: replaced.message, recount: replaced.count, applied: applied.spec.requestedIPCount, generation: applied.metadata.generation, listed: list.items.length, refused, missing, watched }));
`;

describe('the lean Kubernetes client of the node agent', function () {
  this.timeout(60_000);
  let cluster: TestCluster;
  before(async () => {
    cluster = await startTestCluster();
  });
  after(async () => {
    await cluster.close();
  });

  const probe = async (lean: boolean): Promise<Record<string, unknown>> => {
    const { stdout } = await run(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', SCRIPT],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          KC: cluster.server.kubeconfigPath,
          LEAN: lean ? '1' : '0',
          EV: lean ? 'lean' : 'full',
        },
      },
    );
    return JSON.parse(stdout.trim().split('\n').at(-1) as string) as Record<string, unknown>;
  };

  it('loads no generated code of the API groups, yet makes the same calls', async () => {
    const full = await probe(false);
    const lean = await probe(true);
    const loadedFull = full.loaded as string[];
    const loadedLean = lean.loaded as string[];
    expect(loadedFull).to.include('gen/types/ObservableAPI.js');
    expect(loadedFull).to.include('gen/models/ObjectSerializer.js');
    // Of the generated code, only the configuration, HTTP, auth and middleware plumbing.
    expect(loadedLean.filter((f) => f.startsWith('gen/')).sort()).to.deep.equal([
      'gen/apis/baseapi.js',
      'gen/apis/exception.js',
      'gen/auth/auth.js',
      'gen/configuration.js',
      'gen/http/http.js',
      'gen/http/isomorphic-fetch.js',
      'gen/middleware.js',
      'gen/rxjsStub.js',
      'gen/servers.js',
    ]);
    expect(loadedLean).to.not.include('serializer.js');
    // Of undici, its pools and fetch, not its index (HTTP/2, mocks, caches, WebSocket).
    const undiciFull = full.undici as string[];
    const undiciLean = lean.undici as string[];
    expect(undiciFull).to.include('index.js');
    expect(undiciLean).to.include.members([
      'lib/dispatcher/agent.js',
      'lib/dispatcher/proxy-agent.js',
      'lib/web/fetch/index.js',
    ]);
    for (const part of [
      'index.js',
      'lib/mock/',
      'lib/cache/',
      'lib/web/websocket/',
      'lib/interceptor/',
    ]) {
      expect(
        undiciLean.filter((f) => f.startsWith(part)),
        part,
      ).to.deep.equal([]);
    }
    const { loaded: _a, undici: _c, ...callsFull } = full;
    const { loaded: _b, undici: _d, ...callsLean } = lean;
    expect(callsLean).to.deep.equal(callsFull);
    expect(callsLean).to.deep.include({
      podsKind: 'PodList',
      created: 'm',
      count: 1,
      first: 1_700_000_000_000,
      stamped: true,
      replaced: 'm2',
      recount: 2,
      applied: 16,
      listed: 1,
      // the body's name is not the URL's: an ApiException, as from the package's own class
      refused: { code: 400, message: 'Message: Unknown API Status Code!', reason: 'BadRequest' },
      missing: [
        'RequiredError',
        'Required parameter body was null or undefined when calling CoreV1Api.createNamespacedEvent.',
      ],
      watched: ['n1'],
    });
  });
});
