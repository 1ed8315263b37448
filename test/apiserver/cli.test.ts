// `bin/pool-monitor apiserver` as a process: logs its URL and kubeconfig,
// serves, exits 0 on SIGTERM; bad flags exit non-zero with one line.
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));
const CRDS = fileURLToPath(new URL('../../manifests/crds', import.meta.url));

describe('cluster: pool-monitor apiserver command', function () {
  this.timeout(20_000);

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

  it('rejects bad flags with a non-zero exit', () => {
    const r = spawnSync(BIN, ['apiserver', '--port', 'many'], { encoding: 'utf8' });
    expect(r.status).to.not.equal(0);
    const r2 = spawnSync(BIN, ['apiserver', '--crds', '/nonexistent/dir'], { encoding: 'utf8' });
    expect(r2.status).to.not.equal(0);
    expect(r2.stderr).to.match(/not a directory/);
  });
});
