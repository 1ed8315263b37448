// The sidecar's node-API access flags: --listen unix:PATH, --listen-group,
// --node-api-token-file. Bad values fail at start with one clear line and
// change nothing; the token file is read anew when it changes (a rotated
// Secret) and a bad re-read keeps the last good token.
import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenFile } from '../../src/secrets/token-file.ts';
import { resolveSidecarOptions } from '../../src/sidecar/options.ts';

const TOKEN = 'a-node-api-token-of-32-characters';

describe('sidecar: node API access options', () => {
  let dir = '';
  let file = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'node-api-access-'));
    file = join(dir, 'token');
    writeFileSync(file, `${TOKEN}\n`, { mode: 0o600 });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('--listen unix:PATH with a group and a token file', () => {
    const o = resolveSidecarOptions(
      {
        nodeName: 'n',
        listen: 'unix:/run/pool-monitor/cns.sock',
        listenGroup: '4242',
        nodeApiTokenFile: file,
      },
      {},
    );
    expect(o).to.deep.include({
      listenSocket: '/run/pool-monitor/cns.sock',
      listenGroup: 4242,
      nodeApiTokenFile: file,
    });
  });

  it('the default stays CNS-compatible: TCP 127.0.0.1:10092, no token', () => {
    const o = resolveSidecarOptions({ nodeName: 'n' }, {});
    expect(o).to.deep.include({ listenHost: '127.0.0.1', listenPort: 10092 });
    expect(o).not.to.have.property('listenSocket');
    expect(o).not.to.have.property('nodeApiTokenFile');
  });

  const bad: [string, () => Record<string, string>, () => string][] = [
    [
      'a relative socket path',
      () => ({ listen: 'unix:cns.sock' }),
      () => '--listen: unix socket path must be absolute, got "cns.sock"',
    ],
    [
      '--listen-group without a socket',
      () => ({ listenGroup: '4242' }),
      () => '--listen-group needs --listen unix:PATH',
    ],
    [
      'a group that is no gid',
      () => ({ listen: 'unix:/x.sock', listenGroup: 'cni' }),
      () => '--listen-group must be a numeric group id, got "cni"',
    ],
    [
      'a missing token file',
      () => ({ nodeApiTokenFile: join(dir, 'nope') }),
      () => `--node-api-token-file: ${join(dir, 'nope')}: cannot read it (ENOENT)`,
    ],
    [
      'an empty token file',
      () => (writeFileSync(file, '\n'), { nodeApiTokenFile: file }),
      () => `--node-api-token-file: ${file}: is empty`,
    ],
    [
      'a short token',
      () => (writeFileSync(file, 'short'), { nodeApiTokenFile: file }),
      () => `--node-api-token-file: ${file}: the token has 5 characters, at least 16 are needed`,
    ],
    [
      'a token file every user may read',
      () => (chmodSync(file, 0o644), { nodeApiTokenFile: file }),
      () =>
        `--node-api-token-file: ${file}: is readable by every user (mode 0644); make it 0600 or 0640 (a Secret volume's defaultMode)`,
    ],
  ];
  for (const [name, flags, message] of bad)
    it(`refuses ${name}`, () => {
      expect(() => resolveSidecarOptions({ nodeName: 'n', ...flags() }, {})).to.throw(message());
    });

  it('TokenFile: read anew when the file changes; a bad re-read keeps the last token', () => {
    let now = 0;
    const t = new TokenFile(file, { now: () => now, recheckMs: 1000 });
    expect(t.current()).to.equal(TOKEN);
    writeFileSync(file, 'rotated-token-0123456789');
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    expect(t.current(), 'not rechecked within a second').to.equal(TOKEN);
    now = 1500;
    expect(t.current()).to.equal('rotated-token-0123456789');
    rmSync(file);
    now = 3000;
    expect(t.current()).to.equal('rotated-token-0123456789');
  });
});
