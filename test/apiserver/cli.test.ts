// `bin/pool-monitor apiserver` as a process: logs its URL and kubeconfig,
// serves, exits 0 on SIGTERM; bad flags exit non-zero with one line; --tls
// writes a kubeconfig that trusts its CA; --token-auth-file with
// --authorization-mode RBAC and --anonymous false is as strict as a cluster.
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import YAML from 'yaml';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../../manifests/crds', import.meta.url));

/** Starts `apiserver ARGS`; resolves with its "api server listening" log line. */
async function serve(args: string[]): Promise<{
  child: ChildProcess;
  line: Record<string, string>;
  output(): string;
  stop(): Promise<number | null>;
}> {
  const child = spawn(BIN, ['apiserver', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const line = await new Promise<Record<string, string>>((resolve, reject) => {
    const t = setInterval(() => {
      const l = out.split('\n').find((x) => x.includes('api server listening'));
      if (l) {
        clearInterval(t);
        resolve(JSON.parse(l) as Record<string, string>);
      }
    }, 20);
    child.once('exit', () => {
      clearInterval(t);
      reject(new Error(`exited early: ${out}`));
    });
  });
  const stop = () =>
    new Promise<number | null>((resolve) => {
      child.once('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
  return { child, line, output: () => out, stop };
}

describe('cluster: pool-monitor apiserver command', function () {
  this.timeout(20_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'apiserver-cli-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves with the CRDs applied and exits 0 on SIGTERM', async () => {
    const child = spawn(BIN, ['apiserver', '--port', '0', '--crds', CRDS], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const line = await new Promise<Record<string, string>>((resolve, reject) => {
      const t = setInterval(() => {
        const l = out.split('\n').find((x) => x.includes('api server listening'));
        if (l) {
          clearInterval(t);
          resolve(JSON.parse(l) as Record<string, string>);
        }
      }, 20);
      child.once('exit', () => reject(new Error(`exited early: ${out}`)));
    });
    expect(line).to.include({ level: 'info', component: 'apiserver' });
    expect(line.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(existsSync(line.kubeconfig as string)).to.equal(true);
    expect(readFileSync(line.kubeconfig as string, 'utf8')).to.match(
      /insecure-skip-tls-verify: true/,
    );
    // The URL a user would type (the wire format), spelled out.
    const res = await fetch(
      `${line.url}/apis/acn.azure.com/v1alpha/namespaces/kube-system/nodenetworkconfigs`,
    );
    expect(res.status).to.equal(200);
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    expect(code).to.equal(0);
  });

  it('--tls without RBAC is not silent: a warning at start says anyone may write anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pm-apiserver-open-'));
    try {
      const { output, stop } = await serve(['--tls', '--kubeconfig', join(dir, 'kubeconfig')]);
      const warn = output()
        .split('\n')
        .filter((l) => l.includes('"api server is open"'))
        .map((l) => JSON.parse(l) as Record<string, string>);
      expect(warn).to.have.length(1);
      expect(warn[0]?.level).to.equal('warn');
      expect(warn[0]?.risk).to.match(/anonymous included, read and write everything/);
      expect(await stop()).to.equal(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects bad flags with a non-zero exit', () => {
    const r = spawnSync(BIN, ['apiserver', '--port', 'many'], { encoding: 'utf8' });
    expect(r.status).to.not.equal(0);
    const r2 = spawnSync(BIN, ['apiserver', '--crds', '/nonexistent/dir'], { encoding: 'utf8' });
    expect(r2.status).to.not.equal(0);
    expect(r2.stderr).to.match(/not a directory/);
  });

  describe('bad values of the access flags: one line on stderr, non-zero exit', () => {
    const cases: [string, () => string[], RegExp][] = [
      [
        '--authorization-mode Bogus',
        () => ['--authorization-mode', 'Bogus'],
        /--authorization-mode "Bogus": Allowed choices are AlwaysAllow, RBAC/,
      ],
      [
        '--anonymous maybe',
        () => ['--anonymous', 'maybe'],
        /--anonymous "maybe": must be true or false/,
      ],
      [
        '--token-auth-file missing',
        () => ['--token-auth-file', join(dir, 'missing.csv')],
        /--token-auth-file: .*missing\.csv: file not found/,
      ],
      [
        '--token-auth-file with too few columns',
        () => {
          writeFileSync(join(dir, 'short.csv'), 'tok,alice\n');
          return ['--token-auth-file', join(dir, 'short.csv')];
        },
        /--token-auth-file: .*short\.csv: line 1: needs at least 3 columns/,
      ],
      ['--tls with a value', () => ['--tls=yes'], /--tls/],
      [
        '--feature-gates with an unknown gate',
        () => ['--feature-gates', 'NoSuchGate=true'],
        /--feature-gates .*unrecognized feature gate: NoSuchGate/,
      ],
    ];
    for (const [name, args, message] of cases)
      it(name, () => {
        const r = spawnSync(BIN, ['apiserver', ...args()], { encoding: 'utf8' });
        expect(r.status).to.not.equal(0);
        const lines = r.stderr.trim().split('\n');
        expect(lines, r.stderr).to.have.length(1);
        expect(lines[0]).to.match(message);
        expect(r.stdout).to.equal('');
      });
  });

  it('--tls: serves HTTPS and writes a kubeconfig with the CA (certificate-authority-data), no skip-verify', async () => {
    const kubeconfig = join(dir, 'tls.kubeconfig');
    const s = await serve(['--tls', '--kubeconfig', kubeconfig]);
    try {
      expect(s.line.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(s.line.kubeconfig).to.equal(kubeconfig);
      const kc = YAML.parse(readFileSync(kubeconfig, 'utf8')) as {
        clusters: { cluster: Record<string, unknown> }[];
        users: { user: { token: string } }[];
      };
      const cluster = kc.clusters[0]!.cluster;
      expect(cluster.server).to.equal(s.line.url);
      expect(cluster).to.not.have.property('insecure-skip-tls-verify');
      const ca = Buffer.from(String(cluster['certificate-authority-data']), 'base64').toString();
      expect(ca).to.match(/^-----BEGIN CERTIFICATE-----/);
      // Trusting that CA alone is enough.
      const dispatcher = new Agent({ connect: { ca } });
      try {
        const res = await undiciFetch(`${s.line.url}/api/v1/namespaces`, {
          dispatcher,
          headers: { Authorization: `Bearer ${kc.users[0]!.user.token}` },
        });
        expect(res.status).to.equal(200);
      } finally {
        await dispatcher.destroy();
      }
    } finally {
      expect(await s.stop()).to.equal(0);
    }
  });

  it('--token-auth-file, --authorization-mode RBAC, --anonymous false: 401 without a token, 403 without a grant', async () => {
    const tokens = join(dir, 'tokens.csv');
    writeFileSync(tokens, 'viewer-token,viewer,1001,"team,dev"\n');
    const s = await serve([
      '--token-auth-file',
      tokens,
      '--authorization-mode',
      'RBAC',
      '--anonymous',
      'false',
      '--kubeconfig',
      join(dir, 'rbac.kubeconfig'),
    ]);
    try {
      expect(s.line).to.include({ authorizationMode: 'RBAC' });
      expect(s.line.anonymous).to.equal(false);
      const get = (token?: string) =>
        fetch(`${s.line.url}/api/v1/nodes`, {
          headers: token ? { Authorization: `Bearer ${token}` } : {},
        });
      expect((await get()).status).to.equal(401);
      expect((await get('wrong')).status).to.equal(401);
      const denied = await get('viewer-token');
      expect(denied.status).to.equal(403);
      expect(((await denied.json()) as { message: string }).message).to.equal(
        'nodes is forbidden: User "viewer" cannot list resource "nodes" in API group "" at the cluster scope',
      );
      const admin = YAML.parse(readFileSync(join(dir, 'rbac.kubeconfig'), 'utf8')) as {
        users: { user: { token: string } }[];
      };
      expect((await get(admin.users[0]!.user.token)).status).to.equal(200);
    } finally {
      expect(await s.stop()).to.equal(0);
    }
  });
});
