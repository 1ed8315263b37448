import { CoreV1Api } from '@kubernetes/client-node';
import type {
  CoreV1Event,
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  CustomObjectsApi,
} from '@kubernetes/client-node';
import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NNC_KIND, NNC_PLURAL, nncPath } from '../../src/nnc/types.ts';
import {
  NNC,
  NNC_API_VERSION,
  NS,
  startTestCluster,
  type TestCluster,
} from '../support/test-cluster.ts';
import { waitFor } from '../support/wait.ts';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import {
  Backoff,
  backoffDelay,
  MAX_RETRY_AFTER_MS,
  normaliseBackoff,
  retryDelay,
} from '../../src/kube/backoff.ts';
import { KubeConfigError, loadKubeConfig } from '../../src/kube/config.ts';
import { apiErrorInfo, isConflict, isNotFound, parseRetryAfter } from '../../src/kube/errors.ts';
import { createEventRecorder, eventKey } from '../../src/kube/events.ts';
import type { EventsApi } from '../../src/kube/events.ts';
import { watchResource } from '../../src/kube/watch.ts';
import type { WatchEvent } from '../../src/kube/watch.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger, silentLogger } from '../../src/log/logger.ts';

const NNC_PATH = nncPath(NS);

const until = (what: string, ok: () => boolean, timeoutMs = 8000): Promise<boolean> =>
  waitFor(what, ok, timeoutMs);

describe('kube/backoff', () => {
  it('grows exponentially to the cap, jitter within bounds', () => {
    const o = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.2 };
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, o, () => 0.5))).to.deep.equal([
      100, 200, 400, 800, 1000, 1000,
    ]);
    fc.assert(
      fc.property(fc.nat(40), fc.double({ min: 0, max: 0.9999, noNaN: true }), (attempt, r) => {
        const d = backoffDelay(attempt, o, () => r);
        const base = Math.min(1000, 100 * 2 ** attempt);
        return d >= base * 0.8 - 1 && d <= Math.min(1000, base * 1.2 + 1);
      }),
    );
  });

  it('Backoff counts failures and resets; Retry-After wins when longer', () => {
    const b = new Backoff({ initialMs: 10, maxMs: 100, jitter: 0 });
    expect([b.next(), b.next(), b.next()]).to.deep.equal([10, 20, 40]);
    expect(b.failures).to.equal(3);
    b.reset();
    expect(b.next()).to.equal(10);
    expect(retryDelay(10, 3)).to.equal(3000);
    expect(retryDelay(5000, 3)).to.equal(5000);
    expect(retryDelay(10, undefined)).to.equal(10);
    expect(retryDelay(10, 0.0015)).to.equal(10);
    expect(retryDelay(10, 1e9)).to.equal(MAX_RETRY_AFTER_MS); // a broken header cannot park a loop
    expect(retryDelay(10, Number.NaN)).to.equal(10);
  });

  it('normalises partial or nonsense options against the defaults given', () => {
    const defaults = { initialMs: 1000, maxMs: 60_000, factor: 2, jitter: 0.2 };
    expect(normaliseBackoff({}, defaults)).to.deep.equal(defaults);
    expect(
      normaliseBackoff({ initialMs: -5, maxMs: 10, factor: 0.5, jitter: 7 }, defaults),
    ).to.deep.equal({ initialMs: 1000, maxMs: 1000, factor: 1, jitter: 1 });
    expect(backoffDelay(0, defaults, () => Number.NaN)).to.equal(1000);
  });
});

describe('kube/errors', () => {
  it('reads ApiException-shaped errors, watch errors and plain errors', () => {
    const e = Object.assign(new Error('HTTP-Code: 429\nMessage: slow down'), {
      code: 429,
      headers: { 'Retry-After': '7' },
      body: JSON.stringify({ kind: 'Status', message: 'too many requests' }),
    });
    expect(apiErrorInfo(e)).to.deep.equal({
      statusCode: 429,
      retryAfterSeconds: 7,
      message: 'HTTP 429: too many requests',
    });
    expect(apiErrorInfo(Object.assign(new Error('Gone'), { statusCode: 410 })).statusCode).to.equal(
      410,
    );
    expect(apiErrorInfo(new Error('ECONNREFUSED'))).to.deep.equal({
      statusCode: undefined,
      retryAfterSeconds: undefined,
      message: 'ECONNREFUSED',
    });
    expect(apiErrorInfo(Object.assign(new Error('x'), { code: 'ECONNRESET' })).statusCode).to.equal(
      undefined,
    );
    expect(apiErrorInfo('boom').message).to.equal('boom');
    expect(
      apiErrorInfo({ code: 503, body: { details: { retryAfterSeconds: 2 } } }).retryAfterSeconds,
    ).to.equal(2);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('12')).to.equal(12);
    expect(parseRetryAfter(new Date(10_000 + 5000).toUTCString(), 10_000)).to.equal(5);
    expect(parseRetryAfter('soon')).to.equal(undefined);
    expect(parseRetryAfter(undefined)).to.equal(undefined);
  });
});

describe('kube/config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  const good = join(dir, 'good.yaml');
  writeFileSync(
    good,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
  const noContext = join(dir, 'empty.yaml');
  writeFileSync(noContext, 'apiVersion: v1\nkind: Config\nclusters: []\n');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the flag, then KUBECONFIG, then in-cluster', () => {
    expect(loadKubeConfig({ kubeconfig: good, env: { KUBECONFIG: '/nope' } }).source).to.equal(
      'flag',
    );
    const fromEnv = loadKubeConfig({ env: { KUBECONFIG: `${good}:/other` } });
    expect(fromEnv.source).to.equal('env');
    expect(fromEnv.kc.getCurrentCluster()?.server).to.equal('http://127.0.0.1:1');
    const token = join(dir, 'token');
    writeFileSync(token, 't');
    expect(
      loadKubeConfig({
        env: { KUBERNETES_SERVICE_HOST: '10.0.0.1' },
        serviceAccountTokenPath: token,
      }).source,
    ).to.equal('in-cluster');
  });

  it('fails with one clear line naming the source', () => {
    expect(() => loadKubeConfig({ kubeconfig: join(dir, 'missing') })).to.throw(
      KubeConfigError,
      /--kubeconfig .*file not found/,
    );
    expect(() => loadKubeConfig({ env: { KUBECONFIG: noContext } })).to.throw(
      /KUBECONFIG .*no current context/,
    );
    expect(() => loadKubeConfig({ env: {}, serviceAccountTokenPath: join(dir, 'none') })).to.throw(
      /no Kubernetes configuration: pass --kubeconfig FILE, set KUBECONFIG, or run in a cluster/,
    );
  });
});

describe('kube/events (fake API)', () => {
  it('aggregates repeats by count, starts afresh after the window or a lost Event', async () => {
    const created: CoreV1Event[] = [];
    const replaced: CoreV1Event[] = [];
    let failReplace = false;
    const api: EventsApi = {
      createNamespacedEvent: async ({ body }) => {
        created.push(body);
        return body;
      },
      replaceNamespacedEvent: async ({ body }) => {
        if (failReplace) throw Object.assign(new Error('gone'), { code: 404 });
        replaced.push(body);
        return body;
      },
    };
    let t = 1_000_000;
    const rec = createEventRecorder({
      api,
      component: 'test',
      logger: silentLogger(),
      now: () => new Date(t),
      aggregateWindowMs: 60_000,
    });
    const obj = { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'ns', uid: 'u1' };
    const ev = { type: 'Warning' as const, reason: 'Boom', message: 'it broke' };
    await rec.recordEvent(obj, ev);
    t += 1000;
    await rec.recordEvent(obj, ev);
    await rec.recordEvent(obj, { ...ev, message: 'other' });
    expect(created).to.have.length(2);
    expect(replaced).to.have.length(1);
    expect(replaced[0]!.count).to.equal(2);
    expect(replaced[0]!.metadata?.name).to.equal(created[0]!.metadata?.name);
    expect(created[0]).to.deep.include({ type: 'Warning', reason: 'Boom', count: 1 });
    expect(created[0]!.involvedObject).to.deep.equal(obj);
    t += 120_000;
    await rec.recordEvent(obj, ev);
    expect(created).to.have.length(3);
    failReplace = true;
    await rec.recordEvent(obj, ev);
    expect(created).to.have.length(4);
    expect(eventKey(obj, ev)).to.not.equal(eventKey({ ...obj, name: 'q' }, ev));
  });

  it('never throws: a failed create is logged', async () => {
    const capture = new CaptureTransport();
    const rec = createEventRecorder({
      api: {
        createNamespacedEvent: async () => {
          throw Object.assign(new Error('forbidden'), { code: 403 });
        },
        replaceNamespacedEvent: async () => {
          throw new Error('unused');
        },
      },
      component: 'test',
      logger: createLogger({ transports: [capture] }),
    });
    await rec.recordEvent(
      { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'ns' },
      {
        type: 'Normal',
        reason: 'R',
        message: 'm',
      },
    );
    expect(capture.find('event not recorded')).to.have.length(1);
    expect(capture.find('event not recorded')[0]!.error).to.match(/HTTP 403/);
  });

  it('flush waits for Events still being written (so a shutdown does not cut them off)', async () => {
    let finish: () => void = () => {};
    const written: string[] = [];
    const rec = createEventRecorder({
      api: {
        createNamespacedEvent: ({ body }) =>
          new Promise((resolve) => {
            finish = () => {
              written.push(body.reason ?? '');
              resolve(body);
            };
          }),
        replaceNamespacedEvent: async () => {
          throw new Error('unused');
        },
      },
      component: 'test',
      logger: silentLogger(),
    });
    void rec.recordEvent(
      { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'ns' },
      { type: 'Normal', reason: 'Late', message: 'm' },
    );
    let flushed = false;
    const flushing = rec.flush().then(() => (flushed = true));
    await new Promise((r) => setImmediate(r));
    expect(flushed).to.equal(false);
    finish();
    await flushing;
    expect(written).to.deep.equal(['Late']);
    await rec.flush();
  });
});

describe('kube over the local API server', function () {
  this.timeout(20_000);
  let cluster: TestCluster;
  let server: ApiServer;
  let kc: KubeConfig;
  let api: CustomObjectsApi;

  beforeEach(async () => {
    cluster = await startTestCluster();
    ({ server, kc, objects: api } = cluster);
  });
  afterEach(() => cluster.close());

  const create = (name: string) => cluster.createNnc(name, { requestedIPCount: 1 });
  const listFn = async () =>
    (await api.listNamespacedCustomObject(NNC)) as KubernetesListObject<KubernetesObject>;

  it('apiErrorInfo reads real client errors', async () => {
    const err = await api
      .getNamespacedCustomObject({ ...NNC, name: 'absent' })
      .catch((e: unknown) => e);
    expect(isNotFound(err)).to.equal(true);
    await create('dup');
    const dup = await create('dup').catch((e: unknown) => e);
    expect(isConflict(dup)).to.equal(true);
    expect(apiErrorInfo(dup).message).to.match(/^HTTP 409: .*already exists/);
  });

  it('watchResource: cache after the first list, object events, restart after errors, clean stop', async () => {
    await create('a');
    server.faults.inject({ verb: 'list', resource: NNC_PLURAL, status: 500 });
    const w = watchResource<KubernetesObject>({
      kc,
      path: NNC_PATH,
      listFn,
      backoff: { initialMs: 20, maxMs: 100, jitter: 0 },
      logger: silentLogger(),
      name: 'nnc',
    });
    const events: WatchEvent<KubernetesObject>[] = [];
    const caches: string[][] = [];
    w.events$.subscribe((e) => events.push(e));
    w.cache$.subscribe((c) => caches.push(c.map((o) => o.metadata!.name!).sort()));
    expect(w.list()).to.deep.equal([]);
    await w.whenSynced();
    // A list's request and answer are told too (the fulfiller orders by them): not counted here.
    const told = events.filter((e) => e.type !== 'listing' && e.type !== 'listed');
    expect(told.map((e) => e.type).slice(0, 3)).to.deep.equal(['error', 'restarting', 'add']);
    expect(events.filter((e) => e.type === 'listed')).to.have.length(1);
    expect(events.find((e) => e.type === 'error')).to.have.nested.property('info.statusCode', 500);
    expect(caches[0]).to.deep.equal(['a']);

    await create('b');
    await until('b seen', () => caches.some((c) => c.includes('b')));
    await api.deleteNamespacedCustomObject({ ...NNC, name: 'a' });
    await until('a deleted', () => events.some((e) => e.type === 'delete'));
    expect(w.list().map((o) => o.metadata!.name)).to.deep.equal(['b']);

    // A dropped watch plus a compacted history (410 on resume) is recovered.
    server.faults.dropWatches(NNC_PLURAL);
    server.faults.compactHistory();
    await create('c');
    await until('c seen', () => w.get('c', NS) !== undefined);

    let completed = false;
    w.cache$.subscribe({ complete: () => (completed = true) });
    await w.stop();
    expect(completed).to.equal(true);
    await w.stop(); // idempotent
  });

  it('watchResource: a cache$ subscribed late, or after stop, gets the cache as it is then', async () => {
    await create('early');
    const watch = (name: string) =>
      watchResource<KubernetesObject>({ kc, path: NNC_PATH, listFn, logger: silentLogger(), name });
    const names = (c: KubernetesObject[]): string[] => c.map((o) => o.metadata!.name!).sort();
    const w = watch('nnc-late');
    const w2 = watch('nnc-stopped');
    try {
      await w.whenSynced();
      // Nobody listens to cache$ while these change.
      await create('late');
      await until('late seen', () => w.get('late', NS) !== undefined);
      const first: string[][] = [];
      const sub = w.cache$.subscribe((c) => first.push(names(c)));
      expect(first).to.deep.equal([['early', 'late']]);
      // A second subscriber gets the same list; a change reaches both.
      const second: string[][] = [];
      w.cache$.subscribe((c) => second.push(names(c)));
      expect(second).to.deep.equal([['early', 'late']]);
      await api.deleteNamespacedCustomObject({ ...NNC, name: 'early' });
      await until('early gone', () => first.length === 2 && second.length === 2);
      expect(first[1]).to.deep.equal(['late']);
      expect(second[1]).to.deep.equal(['late']);
      sub.unsubscribe();
      // The lists handed out are the callers' own.
      expect(w.list()).to.not.equal(w.list());

      // Unheard: a change, then stop; a subscriber after stop gets the last cache.
      await w2.whenSynced();
      await create('last');
      await until('last seen', () => w2.get('last', NS) !== undefined);
      await w2.stop();
      const afterStop: string[][] = [];
      w2.cache$.subscribe((c) => afterStop.push(names(c)));
      expect(afterStop).to.deep.equal([['last', 'late']]);
    } finally {
      await w.stop();
      await w2.stop();
    }
  });

  it('createEventRecorder writes and aggregates real core/v1 Events', async () => {
    const rec = createEventRecorder({
      kc,
      component: 'ipam-test',
      host: 'node-1',
      logger: silentLogger(),
    });
    const obj = { apiVersion: NNC_API_VERSION, kind: NNC_KIND, name: 'n', namespace: NS };
    await rec.recordEvent(obj, { type: 'Normal', reason: 'PoolScaled', message: '16 -> 32' });
    await rec.recordEvent(obj, { type: 'Normal', reason: 'PoolScaled', message: '16 -> 32' });
    const list = await kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: NS });
    expect(list.items).to.have.length(1);
    expect(list.items[0]).to.deep.include({ reason: 'PoolScaled', count: 2, type: 'Normal' });
    expect(list.items[0]!.involvedObject.name).to.equal('n');
    expect(list.items[0]!.source?.component).to.equal('ipam-test');
  });

  it('createEventRecorder: repeats recorded at once count up one Event (no write sent with a stale resourceVersion)', async () => {
    const rec = createEventRecorder({ kc, component: 'ipam-test', logger: silentLogger() });
    const obj = { apiVersion: NNC_API_VERSION, kind: NNC_KIND, name: 'n', namespace: NS };
    const before = server.counters().writes('events');
    for (let i = 0; i < 5; i++) {
      void rec.recordEvent(obj, { type: 'Warning', reason: 'Refused', message: 'same' });
    }
    await rec.flush();
    const list = await kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: NS });
    expect(list.items.map((e) => e.count)).to.deep.equal([5]);
    expect(server.counters().writes('events') - before).to.equal(5);
  });

  it("createEventRecorder under a flood: similar Events combined, at most 25 written per object (client-go's rules)", async () => {
    const rec = createEventRecorder({ kc, component: 'ipam-test', logger: silentLogger() });
    const obj = { apiVersion: NNC_API_VERSION, kind: NNC_KIND, name: 'n', namespace: NS };
    const before = server.counters().writes('events');
    for (let i = 0; i < 200; i++) {
      await rec.recordEvent(obj, { type: 'Warning', reason: 'Refused', message: `value ${i}` });
    }
    expect(server.counters().writes('events') - before).to.equal(25);
    const list = await kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: NS });
    const combined = list.items.filter((e) =>
      e.message?.startsWith('(combined from similar events): '),
    );
    expect(list.items).to.have.length(10);
    expect(combined).to.have.length(1);
    // The 10th to the 25th: one create and 15 count bumps, showing the latest message.
    expect(combined[0]).to.deep.include({
      count: 16,
      message: '(combined from similar events): value 24',
    });
  });
});
