// The API server's fault policy (what the chaos harness installs) over HTTP:
// asked about every request no counted fault matched, its answer replaces the
// request (nothing is applied, Retry-After is sent).
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import type { FaultRequest } from '../../harness/apiserver/faults.ts';
import { call, NNC_PATH, nnc, openWatch, withCrds } from './helpers.ts';
import { NNC_PLURAL } from '../../src/nnc/types.ts';

describe('apiserver: fault policy', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds({ bookmarkIntervalMs: 100, historyLimit: 50 });
  });
  afterEach(() => server.close());

  it('answers the policy fault instead of serving; counted faults come first; removable', async () => {
    await call(server, 'POST', NNC_PATH, nnc('p'));
    const asked: FaultRequest[] = [];
    server.faults.setPolicy((req) => {
      asked.push(req);
      return req.verb === 'patch' ? { status: 429, retryAfterSeconds: 3 } : undefined;
    });
    const patch = () =>
      call(
        server,
        'PATCH',
        `${NNC_PATH}/p`,
        { spec: { requestedIPCount: 7 } },
        'application/merge-patch+json',
      );
    const limited = await patch();
    expect(limited.status).to.equal(429);
    expect(limited.headers.get('retry-after')).to.equal('3');
    expect((await call(server, 'GET', `${NNC_PATH}/p`)).body.spec.requestedIPCount).to.equal(16);
    expect(asked.map((r) => `${r.verb} ${r.resource}`)).to.deep.equal([
      'patch nodenetworkconfigs',
      'get nodenetworkconfigs',
    ]);
    server.faults.inject({ verb: 'get', resource: NNC_PLURAL, status: 500 });
    expect((await call(server, 'GET', `${NNC_PATH}/p`)).status).to.equal(500);
    expect(asked).to.have.length(2); // the counted fault answered; the policy was not asked
    server.faults.setPolicy(undefined);
    expect((await patch()).status).to.equal(200);
    expect((await call(server, 'GET', `${NNC_PATH}/p`)).body.spec.requestedIPCount).to.equal(7);
  });
});

describe('apiserver: a fault after commit (the answer is lost)', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds();
  });
  afterEach(() => server.close());

  it('applies the write, then answers 500; the next one is served normally', async () => {
    await call(server, 'POST', NNC_PATH, nnc('lost'));
    server.faults.inject({
      verb: 'patch',
      resource: NNC_PLURAL,
      status: 500,
      afterCommit: true,
    });
    const patch = (n: number) =>
      call(
        server,
        'PATCH',
        `${NNC_PATH}/lost`,
        { spec: { requestedIPCount: n } },
        'application/merge-patch+json',
      );
    const lost = await patch(9);
    expect(lost.status).to.equal(500);
    expect(lost.body).to.include({ kind: 'Status', code: 500 });
    expect((await call(server, 'GET', `${NNC_PATH}/lost`)).body.spec.requestedIPCount).to.equal(9);
    expect((await patch(10)).status).to.equal(200);
    server.faults.setPolicy(() => ({ status: 500, afterCommit: true }));
    const created = await call(server, 'POST', NNC_PATH, nnc('landed'));
    expect(created.status).to.equal(500);
    server.faults.setPolicy(undefined);
    expect((await call(server, 'GET', `${NNC_PATH}/landed`)).status).to.equal(200);
    expect((await call(server, 'POST', NNC_PATH, nnc('landed'))).status).to.equal(409);
  });
});

describe('apiserver: a watch resuming from compacted history', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds({ bookmarkIntervalMs: 100, historyLimit: 50 });
  });
  afterEach(() => server.close());

  it('gets 410 Gone in its stream and is counted as 410, not as a server error', async () => {
    const c = await call(server, 'POST', NNC_PATH, nnc('w'));
    const rv = c.body.metadata.resourceVersion as string;
    await call(server, 'POST', NNC_PATH, nnc('x'));
    const fresh = await openWatch(server, `${NNC_PATH}?watch=true&resourceVersion=${rv}`);
    await fresh.waitFor(1);
    fresh.close();
    server.faults.compactHistory();
    const old = await openWatch(server, `${NNC_PATH}?watch=true&resourceVersion=${rv}`);
    await old.ended;
    expect(old.events[0]?.object).to.include({ code: 410 });
    const codes = server
      .counters()
      .entries()
      .filter((e) => e.verb === 'watch')
      .map((e) => `${e.code} ×${e.count}`);
    expect(codes).to.deep.equal(['200 ×1', '410 ×1']);
  });
});
