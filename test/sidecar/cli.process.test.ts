// The real `bin/pool-monitor sidecar` process: it scales the pool, logs JSON
// lines on stdout, exits 0 within 10 s on SIGTERM/SIGINT, and refuses bad
// flags and configuration with one line on stderr and a non-zero status.
import { expect } from 'chai';
import { chmodSync } from 'node:fs';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  getNnc,
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
      const p = spawnSidecar(
        ['--kubeconfig', c.server.kubeconfigPath, '--state-dir', dir.path, '--listen', ':0'],
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
