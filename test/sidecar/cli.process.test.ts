// The real `bin/pool-monitor sidecar` process: it scales the pool, logs JSON
// lines on stdout, exits 0 within 10 s on SIGTERM/SIGINT, and refuses bad
// flags and configuration with one line on stderr and a non-zero status.
import { expect } from 'chai';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  getNnc,
  killStraySidecars,
  logLines,
  spawnSidecar,
  startCluster,
  tempDir,
  waitFor,
  type Cluster,
} from './harness.ts';

describe('bin/pool-monitor sidecar (process)', function () {
  this.timeout(30_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;

  before(async () => {
    c = await startCluster();
  });
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => dir.remove());
  after(async () => {
    killStraySidecars();
    await c?.close();
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`scales the pool, then exits 0 within 10 s on ${signal} with JSON logs only`, async () => {
      const node = `proc-${signal.toLowerCase()}`;
      await createNnc(
        c,
        node,
        { requestedIPCount: 10 },
        {
          scaler: DEFAULT_SCALER,
          networkContainers: [container(Array.from({ length: 10 }, (_, i) => i))],
        },
      );
      for (let i = 0; i < 8; i++) await createPod(c, `${node}-${i}`, node);
      // As the sidecar's service account, its token bound to the node.
      const kubeconfig = await c.strict!.kubeconfigFile('sidecar', node);
      const p = spawnSidecar(
        ['--kubeconfig', kubeconfig, '--state-dir', dir.path, '--listen', ':0'],
        { NODENAME: node },
      );
      const url = await p.listening;
      await waitFor(
        'request 20',
        async () => (await getNnc(c, node)).spec?.requestedIPCount === 20,
        15_000,
      );
      await waitFor('ready', async () => (await fetch(`${url}/readyz`)).status === 200);
      const started = Date.now();
      p.child.kill(signal);
      const { code } = await p.exited;
      expect(code).to.equal(0);
      expect(Date.now() - started).to.be.lessThan(10_000);
      expect(p.stderr()).to.equal('');
      for (const line of p.lines) {
        const rec = JSON.parse(line) as Record<string, unknown>;
        expect(Object.keys(rec).slice(0, 4)).to.deep.equal(['level', 'ts', 'msg', 'component']);
      }
      const msgs = p.lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
      expect(msgs).to.include.members(['scaled pool', 'sidecar stopped', 'node api closed']);
    });
  }

  const refusals: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
    ['an unknown flag', ['--node-name', 'n1', '--bogus'], {}, /unknown option '--bogus'/],
    ['no node name', ['--kubeconfig', '/nonexistent'], {}, /--node-name is required/],
    ['a bad --subnet-state', ['--node-name', 'n1', '--subnet-state', 'all'], {}, /--subnet-state/],
    [
      'a missing kubeconfig',
      ['--node-name', 'n1', '--kubeconfig', '/nonexistent/kubeconfig'],
      {},
      /kubeconfig \/nonexistent\/kubeconfig: file not found/,
    ],
    [
      'no configuration at all',
      ['--node-name', 'n1'],
      { KUBERNETES_SERVICE_HOST: '' },
      /no Kubernetes configuration/,
    ],
  ];
  for (const [what, args, env, pattern] of refusals) {
    it(`refuses ${what} with one line on stderr and exit 1`, async () => {
      const p = spawnSidecar(['--state-dir', dir.path, ...args], env);
      const { code } = await p.exited;
      expect(code).to.equal(1);
      const err = p.stderr().trim();
      expect(err.split('\n')).to.have.length(1);
      expect(err).to.match(pattern);
    });
  }

  describe('fails loudly, stops cleanly', () => {
    let holder: Server;
    let busyPort = 0;
    before(async () => {
      holder = createServer();
      await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
      busyPort = (holder.address() as AddressInfo).port;
    });
    after(() => new Promise<void>((r) => holder.close(() => r())));

    const deadKubeconfig = (): string => {
      const path = join(dir.path, 'dead.kubeconfig');
      writeFileSync(
        path,
        [
          'apiVersion: v1',
          'kind: Config',
          // Port 9 (discard): nothing listens, every request is refused.
          'clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]',
          'users: [{name: u, user: {}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
        ].join('\n'),
      );
      return path;
    };

    const refusedFast = async (listen: string, pattern: RegExp): Promise<void> => {
      const started = Date.now();
      const p = spawnSidecar([
        '--node-name',
        'n1',
        '--kubeconfig',
        c.server.kubeconfigPath,
        '--state-dir',
        dir.path,
        '--listen',
        listen,
      ]);
      const { code } = await p.exited;
      expect(code).to.equal(1);
      expect(Date.now() - started).to.be.lessThan(5000);
      const err = p.stderr().trim();
      expect(err.split('\n'), err).to.have.length(1);
      expect(err).to.match(pattern);
      // Nothing was started: no watch, no "sidecar started".
      expect(logLines(p, 'sidecar started')).to.deep.equal([]);
    };

    it('a --listen port in use: one line on stderr, exit 1 within 5 s', () =>
      refusedFast(
        `127.0.0.1:${busyPort}`,
        /^pool-monitor: --listen 127\.0\.0\.1:\d+: .*EADDRINUSE/,
      ));

    it('a bad --listen: one line on stderr, exit 1 within 5 s', () =>
      refusedFast('nope', /^pool-monitor: --listen: "nope" is not/));

    it('SIGTERM while the API server is unreachable: exit 0', async () => {
      const p = spawnSidecar([
        '--node-name',
        'n1',
        '--kubeconfig',
        deadKubeconfig(),
        '--state-dir',
        dir.path,
        '--listen',
        '127.0.0.1:0',
      ]);
      await p.listening;
      await waitFor('a failed watch', () => logLines(p, 'watch failed').length > 0);
      const started = Date.now();
      p.child.kill('SIGTERM');
      const { code } = await p.exited;
      expect(code).to.equal(0);
      expect(Date.now() - started).to.be.lessThan(10_000);
      expect(p.stderr()).to.equal('');
    });

    it('SIGTERM while it is still starting (modules loading): exit 0', async () => {
      const p = spawnSidecar([
        '--node-name',
        'n1',
        '--kubeconfig',
        deadKubeconfig(),
        '--state-dir',
        dir.path,
      ]);
      // The first JavaScript to run (early-exit.ts) handles SIGTERM and names
      // the process pool-monitor: signal right then, while main.ts's modules
      // are still loading. (Before it there is only Node's native start.)
      const pid = p.child.pid!;
      await waitFor(
        'the process named pool-monitor',
        () => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('pool-monitor'),
        10_000,
      );
      // (Loading runs mostly without yielding: the signal may be handled once
      // the command has taken over, which then shuts down cleanly. Exit 0 either way.)
      const started = Date.now();
      p.child.kill('SIGTERM');
      const { code, signal } = await p.exited;
      expect({ code, signal }).to.deep.equal({ code: 0, signal: null });
      expect(Date.now() - started).to.be.lessThan(10_000);
    });
  });

  it('refuses a missing or unwritable state dir with one line on stderr and exit 1', async () => {
    const missing = spawnSidecar([
      '--node-name',
      'n1',
      '--kubeconfig',
      c.server.kubeconfigPath,
      '--state-dir',
      `${dir.path}/nope`,
    ]);
    expect((await missing.exited).code).to.equal(1);
    expect(missing.stderr().trim()).to.match(
      /^pool-monitor: --state-dir: state dir .* does not exist/,
    );
    if (process.getuid?.() === 0) return; // root writes anywhere
    chmodSync(dir.path, 0o500);
    const ro = spawnSidecar([
      '--node-name',
      'n1',
      '--kubeconfig',
      c.server.kubeconfigPath,
      '--state-dir',
      dir.path,
    ]);
    expect((await ro.exited).code).to.equal(1);
    expect(ro.stderr().trim().split('\n')).to.have.length(1);
    expect(ro.stderr()).to.match(/not writable/);
    chmodSync(dir.path, 0o700);
  });
});
