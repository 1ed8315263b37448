// `embedded --chaos RATE --seed N` refuses bad values in one line naming the
// flag, before anything starts.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../../bin/pool-monitor', import.meta.url));

describe('embedded --chaos: bad flags', function () {
  this.timeout(60_000);
  const cases: [string[], string][] = [
    [['--chaos', '1.5'], 'pool-monitor: --chaos must be a rate from 0 to 1, got "1.5"'],
    [['--chaos', 'lots'], 'pool-monitor: --chaos must be a number >= 0, got "lots"'],
    [['--chaos', '0.2', '--seed', '-3'], 'pool-monitor: --seed must be an integer >= 0, got "-3"'],
    [['--seed', '3'], 'pool-monitor: --seed needs --chaos'],
    [
      ['--chaos', '0.2', '--nodes', '33'],
      'pool-monitor: --chaos runs every sidecar as a process of its own: at most 32 nodes, the run has 33',
    ],
  ];
  for (const [args, line] of cases) {
    it(`${args.join(' ')}: exit 1, one line`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'pm-chaos-cli-'));
      try {
        const r = spawnSync(BIN, ['embedded', ...args], {
          encoding: 'utf8',
          timeout: 30_000,
          env: { ...process.env, XDG_STATE_HOME: dir },
        });
        expect(r.status, r.stderr).to.equal(1);
        expect(r.stderr.trim().split('\n')).to.deep.equal([line]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
