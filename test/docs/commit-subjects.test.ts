// scripts/commit-subjects (`make lint`): every commit after the base has a
// subject of at most 72 characters, counted in characters, the subject as
// git shows it (a subject wrapped onto a second line counts whole); the
// history before the base is not checked. Run on throwaway repositories,
// the script copied into each (it checks the repository it sits in).
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT } from '../../scripts/import-graph.ts';

const SCRIPT = path.join(ROOT, 'scripts/commit-subjects');
const ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.com',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, env: ENV, encoding: 'utf8' }).trim();
}

/** A repository holding the script, with one commit per message; returns the hashes. */
function repo(dir: string, messages: string[]): string[] {
  mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  cpSync(SCRIPT, path.join(dir, 'scripts/commit-subjects'));
  git(dir, 'init', '-q', '-b', 'main');
  return messages.map((m, i) => {
    writeFileSync(path.join(dir, 'f'), String(i));
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', m);
    return git(dir, 'rev-parse', 'HEAD');
  });
}

function check(dir: string, base?: string): { status: number | null; out: string } {
  const r = spawnSync(path.join(dir, 'scripts/commit-subjects'), {
    // Git looks for a repository no higher than the test's own directory.
    env: {
      ...ENV,
      GIT_CEILING_DIRECTORIES: path.dirname(dir),
      ...(base ? { COMMIT_SUBJECTS_BASE: base } : {}),
    },
    encoding: 'utf8',
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('scripts/commit-subjects: subjects of at most 72 characters', function () {
  this.timeout(30_000);
  let tmp: string;
  beforeEach(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'commit-subjects-'));
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  const long = `old: ${'x'.repeat(200)}`;

  it('passes short subjects after the base, whatever came before it', () => {
    const [, base] = repo(tmp, [long, 'the base', 'a: short', `b: ${'y'.repeat(69)}`]);
    const r = check(tmp, base);
    expect(r.status, r.out).to.equal(0);
    expect(r.out).to.contain('2 commit(s) since');
  });

  it('fails a subject of 73 characters, naming the commit and its length', () => {
    const [base, , bad] = repo(tmp, ['the base', 'a: short', `b: ${'y'.repeat(70)}`]);
    const r = check(tmp, base);
    expect(r.status).to.equal(1);
    expect(r.out).to.contain(`${bad!.slice(0, 7)} 73 characters: b: yyy`);
    expect(r.out).to.not.contain('a: short');
  });

  it('counts characters, not bytes', () => {
    const [base] = repo(tmp, ['the base', `c: ${'×'.repeat(69)}`]);
    expect(check(tmp, base).status).to.equal(0);
    git(tmp, 'commit', '-q', '--allow-empty', '-m', `d: ${'×'.repeat(70)}`);
    expect(check(tmp, base).status).to.equal(1);
  });

  it('counts a subject wrapped onto a second line whole', () => {
    const [base] = repo(tmp, ['the base', `e: ${'z'.repeat(50)}\n${'z'.repeat(30)}\n\nthe body`]);
    const r = check(tmp, base);
    expect(r.status).to.equal(1);
    expect(r.out).to.contain('84 characters');
  });

  it('a shallow clone without the base checks every commit it has', () => {
    const origin = path.join(tmp, 'origin');
    mkdirSync(origin);
    const [base] = repo(origin, ['the base', 'f: short', long]);
    const clone = path.join(tmp, 'clone');
    git(tmp, 'clone', '-q', '--depth', '1', `file://${origin}`, clone);
    expect(check(clone, base).status).to.equal(1);
    git(origin, 'commit', '-q', '--allow-empty', '-m', 'g: short');
    const clone2 = path.join(tmp, 'clone2');
    git(tmp, 'clone', '-q', '--depth', '1', `file://${origin}`, clone2);
    expect(check(clone2, base).status).to.equal(0);
  });

  it('refuses a base the full history does not have', () => {
    repo(tmp, ['the base']);
    const r = check(tmp, '1234567890123456789012345678901234567890');
    expect(r.status).to.equal(1);
    expect(r.out).to.contain('not in this history');
  });

  it('says in one line that it skipped outside a git checkout', () => {
    mkdirSync(path.join(tmp, 'scripts'));
    cpSync(SCRIPT, path.join(tmp, 'scripts/commit-subjects'));
    const r = check(tmp);
    expect(r.status, r.out).to.equal(0);
    expect(r.out).to.equal('commit subjects: skipped, not a git checkout (no history to check)\n');
  });
});
