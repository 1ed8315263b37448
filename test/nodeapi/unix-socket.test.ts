// The node API on a unix socket (--listen unix:PATH): created 0660 (never
// wider, not even for a moment: the umask is narrowed while it is bound)
// with the group --listen-group names; a stale socket of a killed sidecar is
// replaced, a live one or a file that is not a socket is refused with a
// clear error; close() removes the socket.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeStore } from './fake-store.ts';
import { podRequest, startApi } from './harness.ts';

function overSocket(path: string, method: string, url: string, body?: string) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(
      { socketPath: path, method, path: url, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('nodeapi: --listen unix:PATH', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'nodeapi-sock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('serves IPAM over a 0660 socket of the given group, removed on close', async () => {
    const sock = join(dir, 'run', 'cns.sock');
    const h = await startApi(FakeStore.withIps(2), {}, false);
    h.state.ready = true;
    try {
      const old = process.umask(0o000);
      try {
        const where = await h.api.listenUnix(sock, { gid: 4242 });
        expect(where).to.equal(sock);
      } finally {
        process.umask(old);
      }
      const st = statSync(sock);
      expect(st.isSocket()).to.equal(true);
      expect((st.mode & 0o777).toString(8)).to.equal('660');
      expect(st.gid).to.equal(4242);
      const r = await overSocket(
        sock,
        'POST',
        '/network/requestipconfigs',
        JSON.stringify(podRequest(1)),
      );
      expect(r.status).to.equal(200);
    } finally {
      await h.close();
    }
    expect(existsSync(sock)).to.equal(false);
  });

  it('replaces a stale socket nobody serves', async () => {
    const sock = join(dir, 'cns.sock');
    // A sidecar killed with SIGKILL leaves its socket file behind.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `require('net').createServer().listen(${JSON.stringify(sock)}, () => console.log('up'))`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await exited;
    expect(existsSync(sock)).to.equal(true);
    const h = await startApi(FakeStore.withIps(2), {}, false);
    try {
      await h.api.listenUnix(sock, {});
      expect((await overSocket(sock, 'GET', '/healthz')).status).to.equal(200);
    } finally {
      await h.close();
    }
  });

  it('refuses a socket another process serves, and a path that is no socket', async () => {
    const sock = join(dir, 'cns.sock');
    const live = createServer();
    await new Promise<void>((r) => live.listen(sock, r));
    const h = await startApi(FakeStore.withIps(2), {}, false);
    try {
      const failure = (p: Promise<unknown>) =>
        p.then(
          () => 'listened',
          (e: Error) => e.message,
        );
      expect(await failure(h.api.listenUnix(sock, {}))).to.equal(
        `${sock}: another process serves this socket`,
      );
      const file = join(dir, 'file');
      writeFileSync(file, 'x');
      expect(await failure(h.api.listenUnix(file, {}))).to.equal(
        `${file}: exists and is not a socket`,
      );
      expect(statSync(sock).isSocket()).to.equal(true);
    } finally {
      await h.close();
      await new Promise<void>((r) => live.close(() => r()));
    }
  });
});
