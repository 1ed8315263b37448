// watchResource asks for watch bookmarks, and the API server's periodic
// bookmarks keep a quiet watch open past client-node's inactivity timeout:
// no reconnect, no re-list. The control case (bookmarks rarer than the
// timeout) shows the same watch does reconnect, so the first can fail.
// Shortened interval and timeout keep this to a couple of seconds.
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { nncPath } from '../../src/nnc/types.ts';
import { CRDS_DIR, sleep, waitFor } from '../support/wait.ts';
import { startApiServer } from '../../harness/apiserver/server.ts';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { loadKubeConfig } from '../../src/kube/config.ts';
import { bookmarkingWatch, watchResource } from '../../src/kube/watch.ts';
import type { ResourceWatch, WatchEvent } from '../../src/kube/watch.ts';
import { silentLogger } from '../../src/log/logger.ts';

const NNC = {
  group: 'acn.azure.com',
  version: 'v1alpha',
  namespace: 'kube-system',
  plural: 'nodenetworkconfigs',
};
const NNC_PATH = nncPath('kube-system');
const INACTIVITY_MS = 500;
const QUIET_MS = 1700; // more than three inactivity windows

const until = (what: string, ok: () => boolean, timeoutMs = 5000): Promise<boolean> =>
  waitFor(what, ok, timeoutMs);

describe('kube/watch bookmarks over the local API server', function () {
  this.timeout(10_000);
  let server: ApiServer | undefined;
  let watch: ResourceWatch<KubernetesObject> | undefined;
  afterEach(async () => {
    await watch?.stop();
    await server?.close();
    watch = undefined;
    server = undefined;
  });

  /** A quiet NNC watch on a server sending bookmarks every `bookmarkMs`. */
  async function quietWatch(bookmarkMs: number) {
    server = await startApiServer({
      crdsDir: CRDS_DIR,
      logger: silentLogger(),
      bookmarkIntervalMs: bookmarkMs,
    });
    const { kc } = loadKubeConfig({ kubeconfig: server.kubeconfigPath });
    const api = kc.makeApiClient(CustomObjectsApi);
    const create = (name: string) =>
      api.createNamespacedCustomObject({
        ...NNC,
        body: {
          apiVersion: 'acn.azure.com/v1alpha',
          kind: 'NodeNetworkConfig',
          metadata: { name, namespace: 'kube-system' },
          spec: { requestedIPCount: 1 },
        },
      });
    await create('a');
    const events: WatchEvent<KubernetesObject>[] = [];
    watch = watchResource<KubernetesObject>({
      kc,
      path: NNC_PATH,
      listFn: async () =>
        (await api.listNamespacedCustomObject(NNC)) as KubernetesListObject<KubernetesObject>,
      logger: silentLogger(),
      name: 'nnc',
      watchInactivityMs: INACTIVITY_MS,
    });
    watch.events$.subscribe((e) => events.push(e));
    await watch.whenSynced();
    const s = server;
    await until('watch open', () => s.counters().count('watch', 'nodenetworkconfigs') === 1);
    await sleep(QUIET_MS);
    return { server: s, events, create, w: watch };
  }

  it('a quiet watch with bookmarks outlives the inactivity timeout: one list, one watch', async () => {
    const { server: s, events, create, w } = await quietWatch(150);
    expect(s.counters().count('list', 'nodenetworkconfigs')).to.equal(1);
    expect(s.counters().count('watch', 'nodenetworkconfigs')).to.equal(1);
    expect(events.map((e) => e.type)).to.deep.equal(['add', 'synced']);
    // The stream is still live: a change arrives on it, as an object, not a bookmark.
    await create('b');
    await until('b seen', () => w.get('b', 'kube-system') !== undefined);
    expect(
      w
        .list()
        .map((o) => o.metadata!.name)
        .sort(),
    ).to.deep.equal(['a', 'b']);
    expect(s.counters().count('watch', 'nodenetworkconfigs')).to.equal(1);
    expect(s.counters().count('list', 'nodenetworkconfigs')).to.equal(1);
  });

  it('control: bookmarks rarer than the timeout, the quiet watch reconnects (resuming, no re-list)', async () => {
    const { server: s, events } = await quietWatch(60_000);
    expect(s.counters().count('watch', 'nodenetworkconfigs')).to.be.at.least(3);
    expect(s.counters().count('list', 'nodenetworkconfigs')).to.equal(1);
    expect(events.some((e) => e.type === 'error')).to.equal(false);
  });

  it('rejects a bad inactivity timeout', () => {
    const kc = new KubeConfig();
    for (const bad of [0, -1, Number.NaN]) {
      expect(() => bookmarkingWatch(kc, bad)).to.throw(/positive number of ms/);
    }
  });
});
