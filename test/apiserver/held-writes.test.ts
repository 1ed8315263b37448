// A write answered 504 and applied later (kube-apiserver's post-timeout
// activity, harness/apiserver/faults.ts): the answer comes at once, the change
// holdMs later, and only if its resourceVersion precondition still holds.
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { sleep } from '../support/wait.ts';
import { call, NNC_PATH, nnc, withCrds } from './helpers.ts';
import { NNC_PLURAL } from '../../src/nnc/types.ts';

describe('apiserver: a held write (answered 504, applied later)', () => {
  let server: ApiServer;
  beforeEach(async () => {
    server = await withCrds();
  });
  afterEach(() => server.close());

  const putStatus = (body: Record<string, unknown>) =>
    call(server, 'PUT', `${NNC_PATH}/h/status`, body);

  it('answers 504 at once and applies the write holdMs later', async () => {
    const created = (await call(server, 'POST', NNC_PATH, nnc('h'))).body;
    server.faults.inject({
      verb: 'update',
      resource: NNC_PLURAL,
      subresource: 'status',
      status: 504,
      afterCommit: true,
      holdMs: 150,
    });
    const answer = await putStatus({ ...created, status: { assignedIPCount: 3 } });
    expect(answer.status).to.equal(504);
    expect((await call(server, 'GET', `${NNC_PATH}/h`)).body.status?.assignedIPCount).to.equal(
      undefined,
    );
    await sleep(300);
    expect((await call(server, 'GET', `${NNC_PATH}/h`)).body.status.assignedIPCount).to.equal(3);
  });

  it('a held write whose resourceVersion moved meanwhile is never applied', async () => {
    const created = (await call(server, 'POST', NNC_PATH, nnc('h'))).body;
    server.faults.inject({
      verb: 'update',
      resource: NNC_PLURAL,
      subresource: 'status',
      status: 504,
      afterCommit: true,
      holdMs: 150,
    });
    expect((await putStatus({ ...created, status: { assignedIPCount: 3 } })).status).to.equal(504);
    const patched = await call(
      server,
      'PATCH',
      `${NNC_PATH}/h`,
      { metadata: { annotations: { moved: 'yes' } } },
      'application/merge-patch+json',
    );
    expect(patched.status).to.equal(200);
    await sleep(300);
    const now = (await call(server, 'GET', `${NNC_PATH}/h`)).body;
    expect(now.status?.assignedIPCount).to.equal(undefined);
    expect(now.metadata.resourceVersion).to.equal(patched.body.metadata.resourceVersion);
  });

  it('refuses a hold without afterCommit or beyond the request timeout', () => {
    const base = { verb: 'update', resource: NNC_PLURAL, status: 504 };
    expect(() => server.faults.inject({ ...base, holdMs: 10 })).to.throw(/afterCommit/);
    expect(() => server.faults.inject({ ...base, afterCommit: true, holdMs: 60_000 })).to.throw(
      /below the request timeout/,
    );
  });
});
