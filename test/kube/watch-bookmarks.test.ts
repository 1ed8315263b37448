// Watches kept as client-go keeps them (docs/decisions/0010, 0031), over
// real HTTP against the local API server: the server's bookmarks keep a
// quiet watch open past the client's inactivity limit (one list, one
// watch); with no bookmarks the same watch is re-opened once per inactivity
// window and resumes from its version, without a list; a resume starts from
// the last bookmark's version, so a compacted history does not cost a list.
// The periods are a minute's scaled down (bookmarks every 2 s, the client's
// limit 3 periods, 6 s, as in the product), to keep this under 20 s.
import { KubeConfig } from '@kubernetes/client-node';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { Watch } from '../../src/kube/client-node.ts';
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { NNC_PLURAL, nncPath } from '../../src/nnc/types.ts';
import { NNC, NS, startTestCluster, type TestCluster } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { nextBookmarkAt } from '../../harness/apiserver/watch.ts';
import {
  bookmarkingWatch,
  WATCH_INACTIVITY_MS,
  watchResource,
  watchTimeoutSeconds,
} from '../../src/kube/watch.ts';
import type { ResourceWatch, WatchEvent } from '../../src/kube/watch.ts';
import { silentLogger } from '../../src/log/logger.ts';

const NNC_PATH = nncPath(NS);
const BOOKMARK_MS = 2000;
const INACTIVITY_MS = 3 * BOOKMARK_MS;

const until = (what: string, ok: () => boolean, timeoutMs = 5000): Promise<boolean> =>
  waitFor(what, ok, timeoutMs);

describe('kube/watch: quiet watches kept as client-go keeps them', function () {
  this.timeout(20_000);
  let cluster: TestCluster | undefined;
  let watch: ResourceWatch<KubernetesObject> | undefined;
  afterEach(async () => {
    await watch?.stop();
    await cluster?.close();
    watch = undefined;
    cluster = undefined;
  });

  /** A synced NNC watch (client limit INACTIVITY_MS) on a server bookmarking every `bookmarkMs` (0: never). */
  async function nncWatch(bookmarkMs: number) {
    cluster = await startTestCluster({ bookmarkIntervalMs: bookmarkMs });
    const { kc, objects: api } = cluster;
    const create = (name: string, namespace = NS) =>
      cluster!.createNnc(name, { requestedIPCount: 1 }, namespace);
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
    const s = cluster.server;
    await until('watch open', () => s.counters().count('watch', NNC_PLURAL) === 1);
    const w = watch;
    const counts = () => ({
      lists: s.counters().count('list', NNC_PLURAL),
      watches: s.counters().count('watch', NNC_PLURAL),
    });
    /** A change made now arrives on the watch. */
    const stillLive = async (name: string) => {
      await create(name);
      await until(`${name} seen`, () => w.get(name, NS) !== undefined);
    };
    return { server: s, events, create, counts, stillLive };
  }

  it('bookmarks every period: a quiet watch outlives the inactivity limit, one list and one watch', async () => {
    const { events, counts, stillLive } = await nncWatch(BOOKMARK_MS);
    await sleep(INACTIVITY_MS + 1000);
    expect(counts()).to.deep.equal({ lists: 1, watches: 1 });
    expect(events.map((e) => e.type)).to.deep.equal(['listed', 'add', 'synced']);
    await stillLive('b');
    expect(counts()).to.deep.equal({ lists: 1, watches: 1 });
  });

  it('no bookmarks: past the inactivity limit the watch is re-opened once and resumes, no list', async () => {
    const { events, counts, stillLive } = await nncWatch(0);
    const t0 = Date.now();
    await until('re-opened', () => counts().watches === 2, INACTIVITY_MS + 3000);
    expect(Date.now() - t0, 'not before the limit').to.be.at.least(INACTIVITY_MS - 1500);
    await sleep(1000);
    expect(counts()).to.deep.equal({ lists: 1, watches: 2 });
    expect(events.some((e) => e.type === 'error' || e.type === 'restarting')).to.equal(false);
    await stillLive('b');
    expect(counts()).to.deep.equal({ lists: 1, watches: 2 });
  });

  /** Other writes move the version on; the watch is dropped after the history is compacted. */
  async function dropAfterCompaction(bookmarkMs: number) {
    const { server: s, create, counts, stillLive } = await nncWatch(bookmarkMs);
    await create('elsewhere', 'default'); // not in the watch's scope: only a bookmark tells it
    await sleep(1200); // bookmarks every 500 ms: at least one after that write
    s.faults.compactHistory();
    s.faults.dropWatches(NNC_PLURAL);
    await until('re-watched', () => counts().watches >= 2);
    await stillLive('b');
    return counts();
  }

  it("resumes from the last bookmark's version: a compacted history costs no list", async () => {
    expect(await dropAfterCompaction(500)).to.deep.equal({ lists: 1, watches: 2 });
  });

  it("control: without bookmarks the resume's version is too old (410), and it lists again", async () => {
    const { lists } = await dropAfterCompaction(0);
    expect(lists).to.equal(2);
  });
});

describe('kube/watch: what a watch request asks for', () => {
  let http: Server | undefined;
  afterEach(async () => {
    const h = http;
    http = undefined;
    if (!h) return;
    h.closeAllConnections();
    await new Promise<void>((resolve) => h.close(() => resolve()));
  });

  it('asks for bookmarks and a timeoutSeconds in client-go reflector range, from the given version', async () => {
    const urls: string[] = [];
    http = createServer((req, res) => {
      urls.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end();
    });
    await new Promise<void>((resolve) => http?.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as { port: number }).port;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const w = bookmarkingWatch(kc, undefined, () => 0.5);
    await w.watch(
      '/api/v1/pods',
      { resourceVersion: '42' },
      () => {},
      () => {},
    );
    await until('the request', () => urls.length === 1);
    w.close();
    const q = new URL(urls[0] ?? '', 'http://x').searchParams;
    expect(Object.fromEntries(q)).to.deep.equal({
      watch: 'true',
      timeoutSeconds: '450',
      resourceVersion: '42',
      allowWatchBookmarks: 'true',
    });
  });

  it('timeoutSeconds: random in [300, 600) s, as client-go minWatchTimeout × (1 + rand)', () => {
    expect(watchTimeoutSeconds(() => 0)).to.equal(300);
    expect(watchTimeoutSeconds(() => 0.999999)).to.equal(599);
    for (let i = 0; i < 100; i += 1) expect(watchTimeoutSeconds()).to.be.within(300, 599);
  });

  it("replaces client-node's 30 s inactivity abort with 3 minutes, three bookmark periods", () => {
    const kc = new KubeConfig();
    const field = (w: Watch) => (w as unknown as { requestTimeoutMs: number }).requestTimeoutMs;
    expect(field(new Watch(kc)), "client-node's own").to.equal(30_000);
    expect(WATCH_INACTIVITY_MS).to.equal(180_000);
    expect(field(bookmarkingWatch(kc))).to.equal(WATCH_INACTIVITY_MS);
    expect(field(bookmarkingWatch(kc, 6000))).to.equal(6000);
  });

  it('rejects a bad inactivity timeout', () => {
    const kc = new KubeConfig();
    for (const bad of [0, -1, Number.NaN]) {
      expect(() => bookmarkingWatch(kc, bad)).to.throw(/positive number of ms/);
    }
  });
});

describe("apiserver: bookmarks on kube-apiserver's schedule", () => {
  it('a period after the last, at the start of its slot (a sixtieth of the period): up to 1 s early, never late', () => {
    expect(nextBookmarkAt(1000.4, 60_000)).to.equal(61_000);
    expect(nextBookmarkAt(1999.9, 60_000)).to.equal(61_000);
    expect(nextBookmarkAt(0, 2000)).to.equal(1980); // slots of 33 ms
  });

  it('2 s before the deadline when that comes first; none within 2 s of it', () => {
    expect(nextBookmarkAt(0, 60_000, 30_000)).to.equal(28_000);
    expect(nextBookmarkAt(28_000, 60_000, 30_000)).to.equal(undefined);
    expect(nextBookmarkAt(0, 60_000, 1500)).to.equal(undefined);
  });
});
