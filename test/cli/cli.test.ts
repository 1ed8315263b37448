// End-to-end through bin/pool-monitor, as a user runs it.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = new URL('../../bin/pool-monitor', import.meta.url).pathname;

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bin/pool-monitor', () => {
  it('prints help and version', () => {
    const help = run('--help');
    expect(help.status).to.equal(0);
    expect(help.stdout).to.contain('simulate');
    const version = run('--version');
    expect(version.status).to.equal(0);
    expect(version.stdout.trim()).to.match(/^\d+\.\d+\.\d+$/);
  });

  it('rejects an unknown command and a bad flag with one line and a non-zero status', () => {
    const unknown = run('frobnicate');
    expect(unknown.status).to.not.equal(0);
    expect(unknown.stderr.trim().split('\n')).to.have.length(1);
    const bad = run('simulate', '--batch', 'many');
    expect(bad.status).to.not.equal(0);
    expect(bad.stderr).to.contain('--batch');
    expect(bad.stderr.trim().split('\n')).to.have.length(1);
  });

  it('simulate --verbose replays a CSV trace and prints JSON lines then a summary', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pm-cli-'));
    const csv = join(dir, 'trace.csv');
    writeFileSync(csv, 'seconds,demand\n0,5\n60,70\n300,5\n');
    const r = run('simulate', '--scenario', csv, '--fulfil-delay', '2', '--verbose');
    expect(r.status, r.stderr).to.equal(0);
    const lines = r.stdout.split('\n');
    const logLines = lines.filter((l) => l.startsWith('{'));
    expect(logLines.length).to.be.greaterThan(3);
    for (const line of logLines) {
      const rec = JSON.parse(line) as Record<string, unknown>;
      expect(Object.keys(rec).slice(0, 4)).to.deep.equal(['level', 'ts', 'msg', 'component']);
    }
    expect(r.stdout).to.contain('simulation summary');
    expect(r.stdout).to.match(/NNC writes\s+\d+/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('simulate prints its summary only, without --verbose', () => {
    const r = run('simulate', '--scenario', 'burst-20m');
    expect(r.status, r.stderr).to.equal(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).to.equal('simulation summary');
    expect(lines.length).to.be.lessThan(15);
    expect(r.stdout).to.not.contain('{');
  });

  it('simulate and embedded never read one scenario name two ways', () => {
    const sim = run('simulate', '--scenario', 'burst');
    expect(sim.status).to.not.equal(0);
    expect(sim.stderr.trim().split('\n')).to.have.length(1);
    expect(sim.stderr).to.match(/--scenario: "burst" is a scenario of the embedded cluster/);
    const emb = run('embedded', '--scenario', 'jobs-1h');
    expect(emb.status).to.not.equal(0);
    expect(emb.stderr.trim().split('\n')).to.have.length(1);
    expect(emb.stderr).to.match(
      /--scenario: "jobs-1h" is a demand trace of bin\/pool-monitor simulate/,
    );
  });

  it('simulate --json prints only the summary object', () => {
    const r = run('simulate', '--scenario', 'jobs-1h', '--json');
    expect(r.status, r.stderr).to.equal(0);
    const summary = JSON.parse(r.stdout.trim()) as Record<string, number>;
    expect(summary.scenario).to.equal('jobs-1h');
    expect(summary.peakDemand).to.equal(52);
    expect(summary.nncWrites).to.be.greaterThan(0);
  });
});

describe('bin/pool-monitor: a listener that cannot bind', () => {
  let holder: Server;
  let port = 0;
  before(async () => {
    holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    port = (holder.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => holder.close(() => r())));

  // "At once" is measured against a start in the same run that loads as
  // much and fails after loading (a missing scenario file): the machine's
  // load moves both alike (2-8 s under a load of 7 on two cores), while a
  // listener failure that kept watches open or retried would run on to the
  // 20 s kill.
  let loadedFailMs = 0;
  before(function () {
    this.timeout(30_000);
    const started = Date.now();
    const r = spawnSync(BIN, ['embedded', '--scenario', '/nonexistent/scenario.yaml'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    loadedFailMs = Date.now() - started;
    expect(r.status, r.stderr).to.equal(1);
  });

  for (const [command, flag] of [
    ['apiserver', '--port'],
    ['embedded', '--api-port'],
  ] as const) {
    it(`${command} ${flag} in use: one line naming the flag, exit 1 within 5 s more than a start that fails after loading`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'pm-cli-'));
      const started = Date.now();
      const r = spawnSync(BIN, [command, flag, String(port)], {
        encoding: 'utf8',
        timeout: 20_000,
        env: { ...process.env, XDG_STATE_HOME: dir },
      });
      rmSync(dir, { recursive: true, force: true });
      expect(r.status, r.stderr).to.equal(1);
      expect(Date.now() - started).to.be.lessThan(loadedFailMs + 5000);
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).to.have.length(1);
      expect(lines[0]).to.equal(
        `pool-monitor: ${flag} ${port}: listen EADDRINUSE: address already in use 127.0.0.1:${port}`,
      );
    });
  }

  it('fulfiller --listen in use: one line naming the flag, before any lease or watch', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pm-cli-'));
    // An API server nobody answers at: the start must not get that far.
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
    const r = spawnSync(
      BIN,
      ['fulfiller', '--kubeconfig', kubeconfig, '--listen', `127.0.0.1:${port}`],
      { encoding: 'utf8', timeout: 20_000 },
    );
    rmSync(dir, { recursive: true, force: true });
    expect(r.status, r.stderr).to.equal(1);
    expect(r.stderr.trim().split('\n'), r.stderr).to.deep.equal([
      `pool-monitor: --listen 127.0.0.1:${port}: listen EADDRINUSE: address already in use 127.0.0.1:${port}`,
    ]);
    expect(r.stdout).to.not.match(/leader election|CRDs|watch/);
  });
});

describe('bin/pool-monitor simulate on SIGTERM', () => {
  it('stops the replay, prints the summary so far and exits 0', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(BIN, ['simulate', '--scenario', 'diurnal-24h', '--verbose'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    // Wait until the replay is under way (decision log lines appear), then signal.
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (out.includes('calculated new request')) resolve();
        else setTimeout(check, 20);
      };
      check();
    });
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).to.equal(0);
    const simulated = /simulated\s+([\d.]+) h/.exec(out);
    expect(simulated, out.slice(-500)).to.not.equal(null);
    expect(Number(simulated?.[1])).to.be.lessThan(24);
  });
});
