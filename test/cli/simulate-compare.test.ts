// simulate --release-delay auto, --compare, --report and --advise, as a user runs them.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = new URL('../../bin/pool-monitor', import.meta.url).pathname;

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bin/pool-monitor simulate: policies side by side', function () {
  this.timeout(120_000);
  let dir: string;
  let csv: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'pm-compare-'));
    csv = join(dir, 'flap.csv');
    const lines = ['seconds,demand'];
    for (let t = 0; t < 900; t += 10) lines.push(`${t},${(t / 10) % 2 ? 25 : 24}`);
    writeFileSync(csv, `${lines.join('\n')}\n`);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('--release-delay auto --json: the summary with the pod wait figures', () => {
    const r = run(
      'simulate',
      '--scenario',
      csv,
      '--release-delay',
      'auto',
      '--fulfil-delay',
      '2',
      '--quiet',
      '--json',
    );
    expect(r.status, r.stderr).to.equal(0);
    const s = JSON.parse(r.stdout) as Record<string, number>;
    for (const k of [
      'nncWrites',
      'ipsAllocated',
      'ipsReleased',
      'idleIpSeconds',
      'podWaitP50Seconds',
      'podWaitP99Seconds',
      'podWaitMaxSeconds',
    ]) {
      expect(s[k], k).to.be.a('number');
    }
    const cns = JSON.parse(
      run('simulate', '--scenario', csv, '--fulfil-delay', '2', '--quiet', '--json').stdout,
    ) as Record<string, number>;
    expect(s.nncWrites).to.be.lessThan(cns.nncWrites! / 4);
  });

  it("--fulfil-timing azure: the control plane at Azure's speed, in the summary and the comparison", () => {
    const at = (...more: string[]) => run('simulate', '--scenario', 'burst-20m', ...more);
    const azure = at('--fulfil-timing', 'azure', '--json');
    expect(azure.status, azure.stderr).to.equal(0);
    const a = JSON.parse(azure.stdout) as Record<string, number>;
    const fixed = JSON.parse(at('--fulfil-delay', '1', '--json').stdout) as Record<string, number>;
    // The burst's pods wait for ARM's rounds (20-60 s), not for a 1 s delay.
    expect(a.podWaitMaxSeconds).to.be.at.least(20);
    expect(fixed.podWaitMaxSeconds).to.be.below(5);
    const compared = at(
      '--compare',
      '--policies',
      'cns-v2,auto',
      '--fulfil-timing',
      'azure',
      '--json',
    );
    expect(compared.status, compared.stderr).to.equal(0);
    const c = JSON.parse(compared.stdout) as { fulfilTiming: string; rows: { policy: string }[] };
    expect(c.fulfilTiming).to.equal('azure');
    expect(c.rows.map((r) => r.policy)).to.deep.equal(['cns-v2', 'auto']);
  });

  it('--fulfil-timing refuses an unknown backend, and --advise with it, in one line each', () => {
    const bad = run('simulate', '--fulfil-timing', 'aws');
    expect(bad.status).to.not.equal(0);
    expect(bad.stderr.trim().split('\n')).to.have.length(1);
    expect(bad.stderr).to.match(/--fulfil-timing.*cidr, azure, azure-scale-set/);
    const advise = run('simulate', '--fulfil-timing', 'azure', '--advise');
    expect(advise.status).to.not.equal(0);
    expect(advise.stdout).to.equal('');
    expect(advise.stderr).to.match(/--advise models a fixed fulfil delay/);
  });

  it('--release-delay with a bad value is one line naming the flag', () => {
    const r = run('simulate', '--release-delay', 'soon');
    expect(r.status).to.not.equal(0);
    expect(r.stderr.trim().split('\n')).to.have.length(1);
    expect(r.stderr).to.contain('--release-delay');
  });

  it('--compare --report: a table on stdout and the page on disk with the same figures', () => {
    const page = join(dir, 'report.html');
    const r = run(
      'simulate',
      '--scenario',
      csv,
      '--fulfil-delay',
      '2',
      '--compare',
      '--report',
      page,
      '--json',
    );
    expect(r.status, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout) as {
      table: { policy: string; writes: number }[];
      report: string;
    };
    expect(out.table.map((t) => t.policy)).to.include.members([
      'cns-v2',
      'cns-v1',
      'cilium-like',
      'aws-like',
      'auto',
    ]);
    const html = readFileSync(page, 'utf8');
    for (const row of out.table) {
      expect(html).to.match(
        new RegExp(
          `<tr data-policy="${row.policy}"[^>]*><td data-field="policy">${row.policy}</td><td data-field="writes">${row.writes}</td>`,
        ),
      );
    }
    const text = run(
      'simulate',
      '--scenario',
      csv,
      '--fulfil-delay',
      '2',
      '--compare',
      '--policies',
      'cns-v2,auto',
    );
    expect(text.status, text.stderr).to.equal(0);
    expect(text.stdout).to.match(/^comparison: /);
    // Header, two rows, and auto's own account.
    expect(text.stdout.trim().split('\n')).to.have.length(5);
    expect(text.stdout).to.match(/auto's own account .*budget 1\.5 x/);
  });

  it('--advise: the batch size and release policy with the figures that justify them', () => {
    const r = run('simulate', '--scenario', csv, '--fulfil-delay', '2', '--advise');
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout).to.match(
      /^advice for .*flap\.csv .*would have made \d+ NNC writes instead of \d+/,
    );
    expect(r.stdout).to.contain('checked in the simulation:');
  });
});
