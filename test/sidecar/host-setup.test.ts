// What the DaemonSet's init container writes on the node: the node API's
// token (host copy 0600, the sidecar's copy 0400 its own, the socket's
// directory sticky for the sidecar's group), and the CNI conflist an overlay
// asks for, never over one it did not write. The pure plan for every case
// of the record and the files there; the files for real in a temp dir
// (src/sidecar/host-setup.ts as the init container runs it).
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import {
  checkConflist,
  formatRecord,
  parseRecord,
  planInstall,
  planRemove,
  sha256,
  type Installed,
} from '../../src/sidecar/cni-conflist.ts';

const SCRIPT = new URL('../../src/sidecar/host-setup.ts', import.meta.url).pathname;
const CONF = '{"cniVersion":"1.1.0","name":"pool-monitor","plugins":[{"type":"macvlan"}]}\n';
const NAME = '10-pool-monitor.conflist';

function setup(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

describe('host-setup: the conflist plan', () => {
  const files = (m: Record<string, string>) => (name: string) => m[name];
  const ours: Installed = { name: NAME, sha256: sha256(CONF) };

  it('writes a file that is not there, and records it', () => {
    expect(planInstall({ name: NAME, text: CONF }, undefined, files({}))).to.deep.equal([
      { kind: 'write', name: NAME, text: CONF },
      { kind: 'record', record: ours },
    ]);
  });

  it('adopts the same bytes put there by hand; rewrites its own older file', () => {
    expect(
      planInstall({ name: NAME, text: CONF }, undefined, files({ [NAME]: CONF })),
    ).to.deep.equal([{ kind: 'record', record: ours }]);
    const older = CONF.replace('macvlan', 'ptp');
    const record = { name: NAME, sha256: sha256(older) };
    expect(planInstall({ name: NAME, text: CONF }, record, files({ [NAME]: older }))).to.deep.equal(
      [
        { kind: 'write', name: NAME, text: CONF },
        { kind: 'record', record: ours },
      ],
    );
  });

  it('refuses a file it did not write, or one changed since', () => {
    const other = CONF.replace('macvlan', 'bridge');
    expect(() =>
      planInstall({ name: NAME, text: CONF }, undefined, files({ [NAME]: other })),
    ).to.throw(/10-pool-monitor.conflist is there and was not written by pool-monitor/);
    expect(() => planInstall({ name: NAME, text: CONF }, ours, files({ [NAME]: other }))).to.throw(
      /or was changed since/,
    );
  });

  it('a renamed conflist: the old one goes when unchanged, stays when changed', () => {
    const old = { name: '20-old.conflist', sha256: sha256(CONF) };
    expect(
      planInstall({ name: NAME, text: CONF }, old, files({ '20-old.conflist': CONF })),
    ).to.deep.equal([
      { kind: 'remove', name: '20-old.conflist' },
      { kind: 'write', name: NAME, text: CONF },
      { kind: 'record', record: ours },
    ]);
    expect(
      planInstall({ name: NAME, text: CONF }, old, files({ '20-old.conflist': 'edited' }))[0],
    ).to.deep.equal({ kind: 'write', name: NAME, text: CONF });
  });

  it('removal takes only what it wrote, unchanged', () => {
    expect(planRemove(undefined, files({ [NAME]: CONF }))).to.deep.equal({ steps: [] });
    expect(planRemove(ours, files({ [NAME]: CONF }))).to.deep.equal({
      steps: [
        { kind: 'remove', name: NAME },
        { kind: 'record', record: undefined },
      ],
    });
    expect(planRemove(ours, files({ [NAME]: 'edited' }))).to.deep.equal({
      steps: [{ kind: 'record', record: undefined }],
      kept: NAME,
    });
  });

  it('never writes over bytes it did not write (any record, any file there)', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.option(fc.string(), { nil: undefined }),
        fc.option(fc.string(), { nil: undefined }),
        (asked, there, recorded) => {
          const record =
            recorded === undefined ? undefined : { name: NAME, sha256: sha256(recorded) };
          let steps;
          try {
            steps = planInstall(
              { name: NAME, text: asked },
              record,
              files(there === undefined ? {} : { [NAME]: there }),
            );
          } catch {
            return;
          }
          const writes = steps.some((s) => s.kind === 'write');
          if (writes && there !== undefined) expect(there).to.equal(recorded);
        },
      ),
    );
  });

  it('the record reads back; a conflist is checked before it is written', () => {
    expect(parseRecord(formatRecord({ name: NAME, sha256: sha256(CONF) }))).to.deep.equal({
      name: NAME,
      sha256: sha256(CONF),
    });
    expect(parseRecord('garbage')).to.equal(undefined);
    expect(() => checkConflist('10-x.conf', CONF)).to.throw(/ending in .conflist/);
    expect(() => checkConflist(NAME, '{')).to.throw(/not JSON/);
    expect(() => checkConflist(NAME, '{"cniVersion":"1.1.0","name":"a","plugins":[]}')).to.throw(
      /at least one plugin/,
    );
  });
});

describe('host-setup: the files, as the init container writes them', () => {
  let dir: string;
  const uid = process.getuid!();
  const gid = process.getgid!();
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'host-setup-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const install = (extra: string[] = []) =>
    setup([
      ...['install', '--run-dir', join(dir, 'run'), '--sidecar-user', `${uid}:${gid}`],
      ...['--token-copy', join(dir, 'pod', 'node-api-token'), ...extra],
    ]);

  it('a new token each time: the host copy 0600, the copy 0400 its owner, the directory sticky', () => {
    expect(install()).to.include({ code: 0 });
    const host = join(dir, 'run', 'node-api-token');
    const copy = join(dir, 'pod', 'node-api-token');
    const first = readFileSync(host, 'utf8');
    expect(first).to.match(/^[0-9a-f]{64}\n$/);
    expect(readFileSync(copy, 'utf8')).to.equal(first);
    expect(statSync(host).mode & 0o7777).to.equal(0o600);
    expect(statSync(copy).mode & 0o7777).to.equal(0o400);
    expect(statSync(copy)).to.include({ uid, gid });
    expect(statSync(join(dir, 'run')).mode & 0o7777).to.equal(0o1770);
    expect(statSync(join(dir, 'run')).gid).to.equal(gid);
    expect(install()).to.include({ code: 0 });
    expect(readFileSync(host, 'utf8')).to.not.equal(first);
    expect(readFileSync(copy, 'utf8')).to.equal(readFileSync(host, 'utf8'));
    expect(execFileSync('ls', ['-A', join(dir, 'run')], { encoding: 'utf8' })).to.equal(
      'node-api-token\n',
    );
  });

  it('installs the asked conflist byte for byte; a refusal changes nothing and says why', () => {
    const from = join(dir, 'cm');
    const conf = join(dir, 'net.d');
    mkdirSync(join(from, '..data'), { recursive: true });
    writeFileSync(join(from, NAME), CONF);
    const args = ['--conflist-from', from, '--cni-conf-dir', conf];
    expect(install(args).code).to.equal(0);
    expect(readFileSync(join(conf, NAME), 'utf8')).to.equal(CONF);
    writeFileSync(join(conf, NAME), CONF.replace('macvlan', 'bridge'));
    const token = readFileSync(join(dir, 'run', 'node-api-token'), 'utf8');
    const refused = install(args);
    expect(refused.code).to.equal(1);
    expect(refused.err).to.equal(
      `host-setup: ${NAME} is there and was not written by pool-monitor (or was changed since): nothing written; move it away, or name another file in the ConfigMap\n`,
    );
    expect(readFileSync(join(dir, 'run', 'node-api-token'), 'utf8')).to.equal(token);
    const gone = setup(['uninstall', '--cni-conf-dir', conf, '--remove', join(dir, 'run')]);
    expect(gone.out).to.contain(`kept ${join(conf, NAME)}: changed since pool-monitor wrote it`);
    expect(execFileSync('ls', ['-A', conf], { encoding: 'utf8' })).to.equal(`${NAME}\n`);
  });

  it('bad arguments: one line, exit 1', () => {
    expect(setup(['install', '--run-dir', dir])).to.deep.include({
      code: 1,
      err: 'host-setup: install needs --run-dir and --token-copy\n',
    });
    expect(setup(['remove'])).to.deep.include({
      code: 1,
      err: 'host-setup: the command must be install or uninstall, got "remove"\n',
    });
  });
});
