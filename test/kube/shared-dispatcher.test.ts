// shareDispatchers: client-node requests through one KubeConfig reuse one
// keep-alive pool instead of a new Agent (and connection) per request.
import { CoreV1Api, KubeConfig, RequestContext, HttpMethod } from '@kubernetes/client-node';
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { kubeconfigYaml } from '../../harness/apiserver/kubeconfig.ts';
import { isWatchUrl, shareDispatchers } from '../../src/kube/shared-dispatcher.ts';

/** A fake API server answering every request with an empty NamespaceList; counts connections. */
async function fakeServer(): Promise<{
  server: Server;
  url: string;
  connections: () => number;
  /** The Authorization header of every request so far. */
  tokens: string[];
}> {
  let connections = 0;
  const tokens: string[] = [];
  const server = createServer((req, res) => {
    tokens.push(req.headers.authorization ?? '');
    const body = JSON.stringify({
      kind: 'NamespaceList',
      apiVersion: 'v1',
      metadata: {},
      items: [],
    });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
    res.end(body);
  });
  server.on('connection', () => (connections += 1));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, connections: () => connections, tokens };
}

function kubeConfigFor(url: string, token?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(url, token ? { token } : {}));
  return kc;
}

async function dispatcherOf(kc: KubeConfig, url = 'http://127.0.0.1/api'): Promise<unknown> {
  const ctx = new RequestContext(url, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return ctx.getDispatcher();
}

describe('kube: shared dispatchers', () => {
  it('client-node alone makes a new dispatcher per request; shared, one for all', async () => {
    const kc = kubeConfigFor('http://127.0.0.1:1');
    const [a, b] = [await dispatcherOf(kc), await dispatcherOf(kc)];
    expect(a).to.not.equal(undefined);
    expect(a).to.not.equal(b);
    const shared = shareDispatchers(kc);
    const [c, d] = [await dispatcherOf(kc), await dispatcherOf(kc)];
    expect(c).to.equal(d);
    expect(shared.count()).to.equal(1);
    await shared.destroy();
    expect(shared.count()).to.equal(0);
    expect(await dispatcherOf(kc)).to.not.equal(c);
  });

  it('without sharing, every request opens a connection', async () => {
    const fake = await fakeServer();
    const core = kubeConfigFor(fake.url).makeApiClient(CoreV1Api);
    try {
      for (let i = 0; i < 3; i++) await core.listNamespace();
      expect(fake.connections()).to.equal(3);
    } finally {
      fake.server.closeAllConnections();
      await new Promise((r) => fake.server.close(r));
    }
  });

  it('tells watch URLs from others', () => {
    expect(isWatchUrl('http://h/api/v1/pods?watch=true&fieldSelector=a%3Db')).to.equal(true);
    expect(isWatchUrl('http://h/api/v1/pods?fieldSelector=a&watch=1')).to.equal(true);
    expect(isWatchUrl('http://h/api/v1/pods?watch=false')).to.equal(false);
    expect(isWatchUrl('http://h/api/v1/pods?fieldSelector=watch%3Dtrue')).to.equal(false);
    expect(isWatchUrl('http://h/api/v1/watch')).to.equal(false);
  });

  it("'own': gives each watch a dispatcher of its own, outside the shared pool", async () => {
    const kc = kubeConfigFor('http://127.0.0.1:1');
    const shared = shareDispatchers(kc, { watches: 'own' });
    const watchUrl = 'http://127.0.0.1:1/api/v1/pods?watch=true';
    const pool = await dispatcherOf(kc);
    const [w1, w2] = [await dispatcherOf(kc, watchUrl), await dispatcherOf(kc, watchUrl)];
    expect(w1).to.not.equal(undefined);
    expect(w1).to.not.equal(pool);
    expect(w1).to.not.equal(w2);
    expect(await dispatcherOf(kc)).to.equal(pool);
    expect(shared.count()).to.equal(1);
    await shared.destroy();
  });

  it("'pooled': watches share one dispatcher of their own, outside the request pool", async () => {
    const kc = kubeConfigFor('http://127.0.0.1:1');
    const shared = shareDispatchers(kc, { maxConnections: 2 });
    const watchUrl = 'http://127.0.0.1:1/api/v1/pods?watch=true';
    const pool = await dispatcherOf(kc);
    const [w1, w2] = [await dispatcherOf(kc, watchUrl), await dispatcherOf(kc, watchUrl)];
    expect(w1).to.not.equal(pool);
    expect(w1).to.equal(w2);
    await shared.destroy();
  });

  it('maxConnections: a burst queues on at most that many connections', async () => {
    const fake = await fakeServer();
    const kc = kubeConfigFor(fake.url);
    const shared = shareDispatchers(kc, { maxConnections: 2 });
    try {
      const core = kc.makeApiClient(CoreV1Api);
      await Promise.all(Array.from({ length: 20 }, () => core.listNamespace()));
      expect(fake.connections()).to.equal(2);
    } finally {
      await shared.destroy();
      fake.server.closeAllConnections();
      await new Promise((r) => fake.server.close(r));
    }
  });

  it('requests reuse kept-alive connections', async () => {
    const fake = await fakeServer();
    const kc = kubeConfigFor(fake.url);
    const shared = shareDispatchers(kc);
    try {
      const core = kc.makeApiClient(CoreV1Api);
      // (undici may open a second connection while the first is being returned to the pool.)
      for (let i = 0; i < 10; i++) await core.listNamespace();
      expect(fake.connections()).to.be.at.most(2);
      // A burst opens more connections, but no more than requests in flight.
      await Promise.all(Array.from({ length: 5 }, () => core.listNamespace()));
      expect(fake.connections()).to.be.at.most(7);
    } finally {
      await shared.destroy();
      fake.server.closeAllConnections();
      await new Promise((r) => fake.server.close(r));
    }
  });

  it('attach: KubeConfigs of other users share the pool, each request with its own token', async () => {
    const fake = await fakeServer();
    const [a, b] = [kubeConfigFor(fake.url, 'token-a'), kubeConfigFor(fake.url, 'token-b')];
    const shared = shareDispatchers(a, { maxConnections: 1 });
    shared.attach(b);
    try {
      expect(await dispatcherOf(a)).to.equal(await dispatcherOf(b));
      const [ca, cb] = [a.makeApiClient(CoreV1Api), b.makeApiClient(CoreV1Api)];
      await Promise.all([ca.listNamespace(), cb.listNamespace(), ca.listNamespace()]);
      expect(fake.connections()).to.equal(1);
      expect([...fake.tokens].sort()).to.deep.equal([
        'Bearer token-a',
        'Bearer token-a',
        'Bearer token-b',
      ]);
    } finally {
      await shared.destroy();
      fake.server.closeAllConnections();
      await new Promise((r) => fake.server.close(r));
    }
    // destroy() gave both their own dispatchers back.
    expect(await dispatcherOf(b)).to.not.equal(await dispatcherOf(b));
  });
});
