// The kubelet's lean pod watch (harness/kubelet/pod-watch.ts) over the
// embedded cluster's plain-HTTP client, against the local API server: what
// a kubelet must hear of its node's pods, through dropped watches,
// compacted history, failing lists and stop().
import { expect } from 'chai';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { httpPodApi, type HttpPodApi } from '../../harness/embedded/http-pod-api.ts';
import { leanPodWatch, type LeanPodWatch } from '../../harness/kubelet/pod-watch.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { sleep, waitFor } from '../support/wait.ts';

const until = (what: string, ok: () => boolean): Promise<true> => waitFor(what, ok);

describe('kubelet: the lean pod watch against the local API server', function () {
  this.timeout(20_000);
  let server: ApiServer;
  let core: CoreV1Api;
  let api: HttpPodApi;
  let watches: LeanPodWatch[];
  // What the handler heard, in order: "+name phase" for a pod, "-name" for a deletion.
  let heard: string[];

  const pod = (name: string, node: string): V1Pod => ({
    metadata: { name, namespace: 'default' },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'pause' }] },
  });
  const start = (backoff = { initialMs: 10, maxMs: 50 }): LeanPodWatch => {
    const w = leanPodWatch({
      source: api,
      query: { fieldSelector: 'spec.nodeName=node-a', namespace: 'default' },
      handler: {
        onPod: (p) => heard.push(`+${p.metadata?.name} ${p.status?.phase ?? ''}`),
        onPodDeleted: (p) => heard.push(`-${p.metadata?.name}`),
      },
      logger: silentLogger(),
      backoff,
    });
    watches.push(w);
    return w;
  };

  beforeEach(async () => {
    server = await startApiServer({ logger: silentLogger() });
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    api = httpPodApi(kc);
    watches = [];
    heard = [];
  });
  afterEach(async () => {
    for (const w of watches) await w.stop();
    api.close();
    await server.close();
  });

  it("lists the node's pods, then hears them created, changed and deleted; other nodes' pods never", async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('early', 'node-a') });
    await core.createNamespacedPod({ namespace: 'default', body: pod('elsewhere', 'node-b') });
    const w = start();
    await w.whenSynced();
    expect(heard).to.deep.equal(['+early Pending']);
    await core.createNamespacedPod({ namespace: 'default', body: pod('late', 'node-a') });
    await api.patchPodStatus('default', 'late', { status: { phase: 'Running' } });
    await core.deleteNamespacedPod({ namespace: 'default', name: 'early' });
    await until('three events', () => heard.length === 4);
    expect(heard).to.deep.equal(['+early Pending', '+late Pending', '+late Running', '-early']);
  });

  it('resumes a dropped watch, and lists again after 410 Gone: a deletion it missed is still heard', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('a', 'node-a') });
    await core.createNamespacedPod({ namespace: 'default', body: pod('b', 'node-a') });
    const w = start({ initialMs: 300, maxMs: 300 });
    await w.whenSynced();
    await core.createNamespacedPod({ namespace: 'default', body: pod('live', 'node-a') });
    await until('the watch delivers', () => heard.includes('+live Pending'));
    // A dropped watch resumes from the last version: nothing heard twice, nothing missed.
    expect(server.faults.dropWatches('pods')).to.equal(1);
    await core.createNamespacedPod({ namespace: 'default', body: pod('c', 'node-a') });
    await until('c', () => heard.includes('+c Pending'));
    expect(heard.filter((h) => h === '+a Pending')).to.have.length(1);

    // The history moves past what the watch saw (another node's pod), then is
    // compacted: the resume gets 410 Gone. Its list fails once, and while it
    // waits b is deleted and d created: only the next list shows them.
    await core.createNamespacedPod({ namespace: 'default', body: pod('other', 'node-b') });
    server.faults.compactHistory();
    server.faults.inject({ verb: 'list', resource: 'pods', status: 500 });
    server.faults.dropWatches('pods');
    await core.deleteNamespacedPod({ namespace: 'default', name: 'b' });
    await core.createNamespacedPod({ namespace: 'default', body: pod('d', 'node-a') });
    await until('b gone and d', () => heard.includes('-b') && heard.includes('+d Pending'));
    expect(heard.filter((h) => h === '-b')).to.have.length(1);
    expect(heard.filter((h) => h.startsWith('+other'))).to.deep.equal([]);
  });

  it('backs off while the list fails, and syncs once it succeeds', async () => {
    server.faults.inject({ verb: 'list', resource: 'pods', status: 500, times: 2 });
    await core.createNamespacedPod({ namespace: 'default', body: pod('a', 'node-a') });
    const w = start();
    await w.whenSynced();
    expect(heard).to.deep.equal(['+a Pending']);
  });

  it('stop() ends a watch at once, rejects a sync still awaited, and nothing is heard after', async () => {
    const w = start();
    await w.whenSynced();
    const t = Date.now();
    await w.stop();
    expect(Date.now() - t).to.be.below(1000);
    await core.createNamespacedPod({ namespace: 'default', body: pod('after', 'node-a') });
    await sleep(100);
    expect(heard).to.deep.equal([]);

    // A watch that never lists (every list refused) is stopped in its backoff.
    server.faults.inject({ verb: 'list', resource: 'pods', status: 500, times: 1000 });
    const never = start({ initialMs: 5000, maxMs: 5000 });
    const synced = never.whenSynced().then(
      () => 'synced',
      (e: Error) => e.message,
    );
    await sleep(100);
    const t2 = Date.now();
    await never.stop();
    expect(Date.now() - t2).to.be.below(1000);
    expect(await synced).to.equal('pod watch stopped before its first list');
  });
});

describe('kubelet: the lean pod watch, on a source that ends every watch at once', () => {
  it('backs off between empty watches instead of reopening them in a loop', async () => {
    let watches = 0;
    const w = leanPodWatch({
      source: {
        listPods: () => Promise.resolve({ items: [], resourceVersion: '1' }),
        watchPods: (_q, _rv, _onLine, onEnd) => {
          watches += 1;
          setImmediate(() => onEnd());
          return { abort: () => {} };
        },
      },
      query: { fieldSelector: 'spec.nodeName=node-a' },
      handler: { onPod: () => {}, onPodDeleted: () => {} },
      logger: silentLogger(),
      backoff: { initialMs: 50, maxMs: 50, jitter: 0 },
    });
    await w.whenSynced();
    await sleep(300);
    await w.stop();
    expect(watches).to.be.within(3, 8);
  });
});

describe('kubelet: the lean pod watch, on a source whose watch request is answered 410', () => {
  it('lists again, as for a 410 in the stream, instead of retrying the same version', async () => {
    let lists = 0;
    let watches = 0;
    const w = leanPodWatch({
      source: {
        listPods: () => {
          lists += 1;
          return Promise.resolve({ items: [], resourceVersion: String(lists) });
        },
        watchPods: (_q, rv, _onLine, onEnd) => {
          watches += 1;
          // The first version is too old; a later list's is not (this watch then stays open).
          if (rv === '1')
            setImmediate(() =>
              onEnd(
                Object.assign(new Error('HTTP 410: too old resource version'), { statusCode: 410 }),
              ),
            );
          return { abort: () => onEnd(new Error('aborted')) };
        },
      },
      query: { fieldSelector: 'spec.nodeName=node-a' },
      handler: { onPod: () => {}, onPodDeleted: () => {} },
      logger: silentLogger(),
      backoff: { initialMs: 5000, maxMs: 5000, jitter: 0 },
    });
    await waitFor('a second list', () => lists === 2);
    await w.stop();
    expect(watches).to.equal(2);
  });
});
