// Where embedded run logs go: the user's state dir, one file per run, the
// newest few kept; never the temp dir unless there is nowhere else.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  KEPT_RUN_LOGS,
  logsToPrune,
  newRunLogFile,
  runLogName,
  stateLogDir,
} from '../../harness/embedded/log-place.ts';

describe('embedded: run log place', () => {
  it('uses $XDG_STATE_HOME, else ~/.local/state', () => {
    expect(stateLogDir({ XDG_STATE_HOME: '/x/state', HOME: '/home/u' })).to.equal(
      '/x/state/pool-monitor',
    );
    // A relative XDG_STATE_HOME is invalid by the spec and ignored.
    expect(stateLogDir({ XDG_STATE_HOME: 'rel', HOME: '/home/u' })).to.equal(
      '/home/u/.local/state/pool-monitor',
    );
  });

  it('names logs by UTC time and pid, so they sort by age', () => {
    expect(runLogName(new Date('2025-03-04T05:06:07.890Z'), 42)).to.equal(
      'embedded-20250304-050607-42.log',
    );
    const names = ['embedded-20250101-000000-1.log', 'other.txt', 'embedded-20240101-000000-9.log'];
    expect(logsToPrune(names, 1)).to.deep.equal(['embedded-20240101-000000-9.log']);
    expect(logsToPrune(names, 5)).to.deep.equal([]);
  });

  it('makes the directory and keeps at most the newest runs next to the new one', () => {
    const home = mkdtempSync(join(tmpdir(), 'log-place-'));
    try {
      const env = { XDG_STATE_HOME: home };
      const dir = join(home, 'pool-monitor');
      const first = newRunLogFile(env, new Date('2025-01-01T00:00:00Z'), 1);
      expect(first).to.equal(join(dir, 'embedded-20250101-000000-1.log'));
      for (let i = 0; i < KEPT_RUN_LOGS + 3; i += 1) {
        writeFileSync(join(dir, runLogName(new Date(Date.UTC(2025, 0, 2, 0, i)), 1)), '');
      }
      writeFileSync(join(dir, 'notes.txt'), 'mine');
      const next = newRunLogFile(env, new Date('2025-02-01T00:00:00Z'), 1);
      writeFileSync(next!, '');
      const left = readdirSync(dir).sort();
      expect(left.filter((n) => n.endsWith('.log'))).to.have.length(KEPT_RUN_LOGS + 1);
      expect(left).to.include('notes.txt');
      expect(left).to.include('embedded-20250201-000000-1.log');
      expect(left).to.not.include('embedded-20250101-000000-1.log');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('gives up (undefined) when the directory cannot be made', () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-place-'));
    try {
      const file = join(dir, 'a-file');
      writeFileSync(file, '');
      expect(newRunLogFile({ XDG_STATE_HOME: file })).to.equal(undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
