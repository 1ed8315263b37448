// The API server over HTTP: verbs, concurrency, status subresource,
// generation, watches, selectors, paging, error bodies, counters, faults.
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { call, NNC_PATH, nnc, openWatch, withCrds } from './helpers.ts';
import { NNC_PLURAL } from '../../src/nnc/types.ts';

describe('cluster: API server over HTTP', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds({ bookmarkIntervalMs: 100, historyLimit: 50 });
  });
  afterEach(() => server.close());

  it('creates, gets, lists, updates and deletes with uid, timestamps and monotonic resourceVersions', async () => {
    const c = await call(server, 'POST', NNC_PATH, nnc('node-1'));
    expect(c.status).to.equal(201);
    expect(c.body.metadata.uid).to.be.a('string');
    expect(c.body.metadata.generation).to.equal(1);
    const rv1 = Number(c.body.metadata.resourceVersion);
    expect((await call(server, 'POST', NNC_PATH, nnc('node-1'))).status).to.equal(409);
    const g = await call(server, 'GET', `${NNC_PATH}/node-1`);
    expect(g.body.spec.requestedIPCount).to.equal(16);
    const l = await call(server, 'GET', NNC_PATH);
    expect(l.body.kind).to.equal('NodeNetworkConfigList');
    expect(l.body.items).to.have.length(1);
    const u = await call(server, 'PUT', `${NNC_PATH}/node-1`, {
      ...g.body,
      spec: { requestedIPCount: 32 },
    });
    expect(u.status).to.equal(200);
    expect(Number(u.body.metadata.resourceVersion)).to.be.greaterThan(rv1);
    expect(u.body.metadata.generation).to.equal(2);
    // Stale resourceVersion: 409 Conflict, nothing changes.
    const stale = await call(server, 'PUT', `${NNC_PATH}/node-1`, {
      ...g.body,
      spec: { requestedIPCount: 64 },
    });
    expect(stale.status).to.equal(409);
    expect(stale.body).to.include({ kind: 'Status', reason: 'Conflict', code: 409 });
    expect((await call(server, 'GET', `${NNC_PATH}/node-1`)).body.spec.requestedIPCount).to.equal(
      32,
    );
    const d = await call(server, 'DELETE', `${NNC_PATH}/node-1`);
    expect(d.status).to.equal(200);
    const gone = await call(server, 'GET', `${NNC_PATH}/node-1`);
    expect(gone.status).to.equal(404);
    expect(gone.body).to.include({
      reason: 'NotFound',
      message: 'nodenetworkconfigs.acn.azure.com "node-1" not found',
    });
  });

  it('keeps status and spec apart through the status subresource; generation follows spec only', async () => {
    await call(server, 'POST', NNC_PATH, { ...nnc('n'), status: { assignedIPCount: 99 } });
    let o = (await call(server, 'GET', `${NNC_PATH}/n`)).body;
    expect(o.status).to.equal(undefined); // status is dropped on create
    const s = await call(
      server,
      'PATCH',
      `${NNC_PATH}/n/status`,
      { status: { assignedIPCount: 8 }, spec: { requestedIPCount: 1 } },
      'application/merge-patch+json',
    );
    expect(s.status).to.equal(200);
    expect(s.body.status.assignedIPCount).to.equal(8);
    expect(s.body.spec.requestedIPCount).to.equal(16);
    expect(s.body.metadata.generation).to.equal(1);
    const m = await call(
      server,
      'PATCH',
      `${NNC_PATH}/n`,
      { status: { assignedIPCount: 0 }, metadata: { labels: { a: 'b' } } },
      'application/merge-patch+json',
    );
    expect(m.body.status.assignedIPCount).to.equal(8);
    expect(m.body.metadata.generation).to.equal(1);
    o = (
      await call(
        server,
        'PATCH',
        `${NNC_PATH}/n`,
        [{ op: 'replace', path: '/spec/requestedIPCount', value: 4 }],
        'application/json-patch+json',
      )
    ).body;
    expect(o.metadata.generation).to.equal(2);
    // A no-op patch changes nothing, not even the resourceVersion.
    const again = await call(
      server,
      'PATCH',
      `${NNC_PATH}/n`,
      { spec: { requestedIPCount: 4 } },
      'application/merge-patch+json',
    );
    expect(again.body.metadata.resourceVersion).to.equal(o.metadata.resourceVersion);
  });

  it('never changes a stored object in place: a status write leaves the previous version as it was', async () => {
    const pods = '/api/v1/namespaces/default/pods';
    await call(server, 'POST', pods, {
      metadata: { name: 'p', labels: { app: 'a' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
    });
    const stored = server.objects('', 'pods', 'default')[0] as Record<string, unknown>;
    const before = JSON.stringify(stored);
    const s = await call(
      server,
      'PATCH',
      `${pods}/p/status`,
      // Status only. kube-apiserver keeps a pods/status write's labels too
      // (podStatusStrategy resets only spec, metadata.deletionTimestamp and
      // ownerReferences: pkg/registry/core/pod/strategy.go); this server takes
      // the status alone. A known difference, and not this test's point.
      { status: { phase: 'Running', podIP: '10.0.0.9' } },
      'application/merge-patch+json',
    );
    expect(s.status).to.equal(200);
    expect(s.body.status.podIP).to.equal('10.0.0.9');
    expect(s.body.metadata.labels).to.deep.equal({ app: 'a' });
    expect(JSON.stringify(stored)).to.equal(before);
    const now = server.objects('', 'pods', 'default')[0] as {
      metadata: { resourceVersion: string };
    };
    expect(now.metadata.resourceVersion).to.not.equal(JSON.parse(before).metadata.resourceVersion);
  });

  it('answers a write with the object its watch events carry, each line as JSON.stringify writes it', async () => {
    const pods = '/api/v1/namespaces/default/pods';
    const ctl = new AbortController();
    const w = await fetch(`${server.url}${pods}?watch=true`, { signal: ctl.signal });
    const reader = w.body!.getReader();
    const answers: string[] = [];
    const post = await fetch(server.url + pods, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'p' }, spec: { nodeName: 'n1', containers: [] } }),
    });
    answers.push(await post.text());
    const patch = await fetch(`${server.url}${pods}/p/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status: { podIP: '10.0.0.7' } }),
    });
    answers.push(await patch.text());
    let text = '';
    while (text.split('\n').length < 3)
      text += new TextDecoder().decode((await reader.read()).value);
    ctl.abort();
    const lines = text.split('\n').slice(0, 2);
    lines.forEach((line, i) => {
      const event = JSON.parse(line) as { type: string; object: unknown };
      expect(line).to.equal(JSON.stringify({ type: event.type, object: event.object }));
      expect(event.type).to.equal(i === 0 ? 'ADDED' : 'MODIFIED');
      expect(answers[i]).to.equal(JSON.stringify(event.object));
    });
  });

  it('answers bad requests with the right Status and changes nothing', async () => {
    const before = (await call(server, 'GET', NNC_PATH)).body.metadata.resourceVersion;
    expect((await call(server, 'POST', NNC_PATH, '{not json')).status).to.equal(400);
    expect((await call(server, 'POST', NNC_PATH, 'a: [b', 'application/yaml')).status).to.equal(
      400,
    );
    expect(
      (await call(server, 'POST', NNC_PATH, { ...nnc('x'), spec: { requestedIPCount: 'many' } }))
        .status,
    ).to.equal(422);
    expect((await call(server, 'POST', NNC_PATH, nnc('Bad_Name'))).status).to.equal(422);
    expect(
      (await call(server, 'GET', '/apis/acn.azure.com/v1alpha/namespaces/kube-system/widgets'))
        .status,
    ).to.equal(404);
    expect(
      (await call(server, 'POST', '/api/v1/namespaces/nope/pods', { metadata: { name: 'p' } }))
        .status,
    ).to.equal(404);
    await call(server, 'POST', NNC_PATH, nnc('y'));
    const smp = await call(
      server,
      'PATCH',
      `${NNC_PATH}/y`,
      { spec: {} },
      'application/strategic-merge-patch+json',
    );
    expect(smp.status).to.equal(415);
    expect(
      (await call(server, 'PATCH', `${NNC_PATH}/y`, { spec: {} }, 'text/plain')).status,
    ).to.equal(415);
    const big = await call(server, 'POST', NNC_PATH, {
      ...nnc('z'),
      pad: 'x'.repeat(4 * 1024 * 1024),
    });
    expect(big.status).to.equal(413);
    const after = (await call(server, 'GET', NNC_PATH)).body;
    expect(after.items.map((i: { metadata: { name: string } }) => i.metadata.name)).to.deep.equal([
      'y',
    ]);
    expect(Number(after.metadata.resourceVersion)).to.equal(Number(before) + 1);
  });

  it('prunes unknown fields, or rejects them with fieldValidation=Strict', async () => {
    const body = { ...nnc('u'), spec: { requestedIPCount: 1, bogus: true } };
    const strict = await call(server, 'POST', `${NNC_PATH}?fieldValidation=Strict`, body);
    expect(strict.status).to.equal(400);
    expect(strict.body.message).to.match(/unknown field "spec.bogus"/);
    const pruned = await call(server, 'POST', NNC_PATH, body);
    expect(pruned.status).to.equal(201);
    expect(pruned.body.spec).to.deep.equal({ requestedIPCount: 1 });
  });

  it('answers a selector that does not parse with 400 BadRequest, as kube-apiserver does', async () => {
    const labels = await call(server, 'GET', `${NNC_PATH}?labelSelector=a%20b%20c`);
    expect(labels.status).to.equal(400);
    expect(labels.body.reason).to.equal('BadRequest');
    expect(labels.body.message).to.match(/found 'a b c'/);
    const fields = await call(server, 'GET', `${NNC_PATH}?watch=true&fieldSelector=nonsense`);
    expect(fields.status).to.equal(400);
    expect(fields.body.message).to.match(/can't understand 'nonsense'/);
  });

  it('filters lists by label and field selectors and pages with limit/continue', async () => {
    for (let i = 0; i < 5; i++)
      await call(server, 'POST', NNC_PATH, nnc(`n${i}`, 16, { pool: i % 2 ? 'odd' : 'even' }));
    const even = await call(server, 'GET', `${NNC_PATH}?labelSelector=pool%3Deven`);
    expect(even.body.items).to.have.length(3);
    const byName = await call(server, 'GET', `${NNC_PATH}?fieldSelector=metadata.name!%3Dn0`);
    expect(byName.body.items).to.have.length(4);
    const names: string[] = [];
    let cont = '';
    for (;;) {
      const page = await call(
        server,
        'GET',
        `${NNC_PATH}?limit=2${cont ? `&continue=${cont}` : ''}`,
      );
      names.push(...page.body.items.map((i: { metadata: { name: string } }) => i.metadata.name));
      cont = page.body.metadata.continue ?? '';
      if (!cont) break;
    }
    expect(names).to.deep.equal(['n0', 'n1', 'n2', 'n3', 'n4']);
    await call(server, 'POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: 'a' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
    });
    await call(server, 'POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: 'b' },
      spec: { nodeName: 'n1', hostNetwork: true, containers: [{ name: 'c', image: 'i' }] },
    });
    const pods = await call(
      server,
      'GET',
      '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,spec.hostNetwork!%3Dtrue,status.phase!%3DSucceeded',
    );
    expect(
      pods.body.items.map((p: { metadata: { name: string } }) => p.metadata.name),
    ).to.deep.equal(['a']);
  });

  it('watches: resume from a resourceVersion, selector scope changes, bookmarks, timeout, 410 Gone', async () => {
    const c = await call(server, 'POST', NNC_PATH, nnc('w', 1, { watched: 'yes' }));
    const rv0 = c.body.metadata.resourceVersion;
    await call(
      server,
      'PATCH',
      `${NNC_PATH}/w`,
      { spec: { requestedIPCount: 2 } },
      'application/merge-patch+json',
    );
    const w = await openWatch(
      server,
      `${NNC_PATH}?watch=true&resourceVersion=${rv0}&labelSelector=watched%3Dyes&allowWatchBookmarks=true`,
    );
    await call(
      server,
      'PATCH',
      `${NNC_PATH}/w`,
      { metadata: { labels: { watched: 'no' } } },
      'application/merge-patch+json',
    );
    await call(
      server,
      'PATCH',
      `${NNC_PATH}/w`,
      { metadata: { labels: { watched: 'yes' } } },
      'application/merge-patch+json',
    );
    await call(server, 'DELETE', `${NNC_PATH}/w`);
    const evs = await w.waitFor(5);
    const real = evs.filter((e) => e.type !== 'BOOKMARK');
    expect(real.map((e) => e.type)).to.deep.equal(['MODIFIED', 'DELETED', 'ADDED', 'DELETED']);
    const rvs = real.map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs).to.deep.equal([...rvs].sort((a, b) => a - b));
    expect(evs.some((e) => e.type === 'BOOKMARK')).to.equal(true);
    w.close();
    const t = await openWatch(server, `${NNC_PATH}?watch=1&timeoutSeconds=1`);
    await t.ended;
    server.faults.compactHistory();
    const old = await openWatch(server, `${NNC_PATH}?watch=true&resourceVersion=${rv0}`);
    await old.ended;
    expect(old.events).to.have.length(1);
    expect(old.events[0]?.type).to.equal('ERROR');
    expect(old.events[0]?.object).to.include({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it('watch without a resourceVersion starts with the current objects as ADDED', async () => {
    await call(server, 'POST', NNC_PATH, nnc('a'));
    const w = await openWatch(server, `${NNC_PATH}?watch=true`);
    await call(server, 'POST', NNC_PATH, nnc('b'));
    const evs = await w.waitFor(2);
    expect(evs.map((e) => `${e.type} ${e.object.metadata.name}`)).to.deep.equal([
      'ADDED a',
      'ADDED b',
    ]);
    expect(server.faults.dropWatches(NNC_PLURAL)).to.equal(1);
    await w.ended;
  });

  it('counts requests by verb and resource, in process and at /metrics; injects faults', async () => {
    await call(server, 'POST', NNC_PATH, nnc('c'));
    await call(
      server,
      'PATCH',
      `${NNC_PATH}/c`,
      { spec: { requestedIPCount: 3 } },
      'application/merge-patch+json',
    );
    await call(
      server,
      'PATCH',
      `${NNC_PATH}/c/status`,
      { status: { assignedIPCount: 3 } },
      'application/merge-patch+json',
    );
    server.faults.inject({
      verb: 'patch',
      resource: NNC_PLURAL,
      status: 429,
      retryAfterSeconds: 2,
      times: 1,
    });
    const limited = await call(
      server,
      'PATCH',
      `${NNC_PATH}/c`,
      { spec: { requestedIPCount: 4 } },
      'application/merge-patch+json',
    );
    expect(limited.status).to.equal(429);
    expect(limited.headers.get('retry-after')).to.equal('2');
    expect((await call(server, 'GET', `${NNC_PATH}/c`)).body.spec.requestedIPCount).to.equal(3);
    const ok = await call(
      server,
      'PATCH',
      `${NNC_PATH}/c`,
      { spec: { requestedIPCount: 4 } },
      'application/merge-patch+json',
    );
    expect(ok.status).to.equal(200);
    const counters = server.counters();
    expect(counters.count('patch', NNC_PLURAL)).to.equal(3);
    expect(counters.count('patch', 'nodenetworkconfigs/status')).to.equal(1);
    expect(counters.count('create', NNC_PLURAL)).to.equal(1);
    expect(counters.writes(NNC_PLURAL)).to.equal(5);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).to.match(
      /apiserver_request_total\{verb="patch",resource="nodenetworkconfigs",subresource="",code="200"\} 2/,
    );
    expect(metrics).to.match(/code="429"\} 1/);
  });

  it('serves discovery and registers custom resources when a CRD is created; namespaces cascade', async () => {
    const apis = await call(server, 'GET', '/apis');
    expect(apis.body.groups.map((g: { name: string }) => g.name)).to.include.members([
      'acn.azure.com',
      'coordination.k8s.io',
      'apiextensions.k8s.io',
    ]);
    const core = await call(server, 'GET', '/api/v1');
    expect(core.body.resources.map((r: { name: string }) => r.name)).to.include.members([
      'pods',
      'pods/status',
      'nodes',
      'namespaces',
      'events',
    ]);
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Cluster',
        names: { plural: 'widgets', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        ],
      },
    };
    expect((await call(server, 'GET', '/apis/example.com/v1/widgets')).status).to.equal(404);
    expect(
      (await call(server, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd))
        .status,
    ).to.equal(201);
    expect(
      (
        await call(server, 'POST', '/apis/example.com/v1/widgets', {
          metadata: { name: 'w' },
          any: 1,
        })
      ).status,
    ).to.equal(201);
    expect((await call(server, 'GET', '/apis/example.com/v1')).body.resources[0].name).to.equal(
      'widgets',
    );
    await call(
      server,
      'DELETE',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com',
    );
    expect((await call(server, 'GET', '/apis/example.com/v1/widgets')).status).to.equal(404);
    await call(server, 'POST', '/api/v1/namespaces', { metadata: { name: 'tmp' } });
    await call(server, 'POST', '/api/v1/namespaces/tmp/pods', {
      metadata: { name: 'p' },
      spec: { containers: [] },
    });
    await call(server, 'DELETE', '/api/v1/namespaces/tmp');
    expect((await call(server, 'GET', '/api/v1/namespaces/tmp/pods/p')).status).to.equal(404);
  });

  it('deletes objects with finalizers only when the last finalizer goes', async () => {
    await call(server, 'POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: 'f', finalizers: ['x/y'] },
      spec: { containers: [] },
    });
    const d = await call(server, 'DELETE', '/api/v1/namespaces/default/pods/f');
    expect(d.body.metadata.deletionTimestamp).to.be.a('string');
    expect((await call(server, 'GET', '/api/v1/namespaces/default/pods/f')).status).to.equal(200);
    await call(
      server,
      'PATCH',
      '/api/v1/namespaces/default/pods/f',
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    expect((await call(server, 'GET', '/api/v1/namespaces/default/pods/f')).status).to.equal(404);
  });
});

describe('cluster: API server temp files', () => {
  it('removes the kubeconfig directory it made for itself on close', async () => {
    const server = await startApiServer();
    const dir = dirname(server.kubeconfigPath);
    expect(existsSync(server.kubeconfigPath)).to.equal(true);
    await server.close();
    expect(existsSync(dir), dir).to.equal(false);
  });
});
