// The node agent's bundled file (scripts/bundle-sidecar.ts, docs/decisions/0027):
// what goes into it, and bin/pool-monitor running the sidecar from it while
// it is newer than every source, from the sources otherwise. Each case builds
// its own copy in a temp dir (bin, src, the manifests; node_modules linked),
// never the repository's dist/, which other test files' processes run.
import { expect } from 'chai';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Metafile } from 'esbuild';
import { bundleSidecar, firstNonAscii } from '../../scripts/bundle-sidecar.ts';
import { importsOf } from '../support/imports-of.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the bundled sidecar (dist/sidecar.js)', function () {
  this.timeout(60_000);
  let dir: string;
  let meta: Metafile;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pm-bundle-'));
    mkdirSync(join(dir, 'bin'));
    cpSync(join(ROOT, 'bin/pool-monitor'), join(dir, 'bin/pool-monitor'));
    cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true, preserveTimestamps: true });
    for (const f of ['package.json', 'package-lock.json']) cpSync(join(ROOT, f), join(dir, f));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    // Sources a minute old, the bundle made now: the bundle is the newer.
    const old = new Date(Date.now() - 60_000);
    for (const f of ['src/cli/sidecar.ts', 'package-lock.json']) utimesSync(join(dir, f), old, old);
    meta = await bundleSidecar(join(dir, 'dist/sidecar.js'));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  /** `bin/pool-monitor sidecar` with a kubeconfig that is not there: its stderr and what it loaded. */
  function runSidecar(env: Record<string, string> = {}): { stderr: string; loaded: string[] } {
    const r = importsOf(
      join(dir, 'bin/pool-monitor'),
      [
        'sidecar',
        '--node-name',
        'n1',
        '--kubeconfig',
        join(dir, 'absent'),
        '--state-dir',
        join(dir, 'state'),
      ],
      env,
    );
    expect(r.status, r.stderr).to.equal(1);
    const prefix = new URL(dir + '/', 'file://').href;
    const loaded = r.urls
      .filter((u) => u.startsWith(prefix) && !u.includes('/node_modules/'))
      .map((u) => u.slice(prefix.length));
    return { stderr: r.stderr, loaded };
  }

  it("holds the agent's modules and the client's lean parts, none of the fulfiller, Azure, the generated API or undici's index", () => {
    const inputs = Object.keys(meta.inputs);
    expect(inputs).to.include.members([
      'src/cli/sidecar-main.ts',
      'src/sidecar/run.ts',
      'src/kube/lean/gen-index.ts',
      'src/kube/lean/serializer.ts',
      'src/kube/lean/undici.ts',
      'node_modules/@kubernetes/client-node/dist/config.js',
      'node_modules/@kubernetes/client-node/dist/watch.js',
    ]);
    const unwanted = inputs.filter((i) =>
      /^src\/(fulfiller|azure|sim|leader)\/|^harness\/|\/@azure\/|client-node\/dist\/(index|api|serializer)\.js$|\/undici\/(index\.js$|lib\/(mock|cache|interceptor)\/)|client-node\/dist\/gen\/(index\.js|models\/|types\/|apis\/(?!baseapi|exception))/.test(
        i,
      ),
    );
    expect(unwanted).to.deep.equal([]);
  });

  it('is ASCII, its libraries’ license comments in a file beside it', () => {
    const bundle = readFileSync(join(dir, 'dist/sidecar.js'));
    expect(firstNonAscii(bundle)).to.equal(-1);
    expect(bundle.toString('latin1')).to.include(
      'For license information please see sidecar.js.LEGAL.txt',
    );
    const legal = readFileSync(join(dir, 'dist/sidecar.js.LEGAL.txt'), 'utf8');
    expect(legal).to.match(/formdata-polyfill\. MIT License\. Jimmy W\u00e4rting/);
    expect(firstNonAscii(Buffer.from('abc\u00e4', 'utf8'))).to.equal(3);
  });

  it('takes Node’s built-ins through require(), the banner’s node:module aside', () => {
    const bundle = readFileSync(join(dir, 'dist/sidecar.js'), 'latin1');
    const imports = [
      ...bundle.matchAll(/\bimport\s*(?:[\w{}\s,*]+from\s*)?["']((?:node:)?[\w/]+)["']/g),
    ]
      .map((m) => m[1])
      .filter((spec) => isBuiltin(spec as string));
    expect(imports).to.deep.equal(['node:module']);
    expect(bundle).to.match(/require\("node:http"\)/);
  });

  it('bin/pool-monitor runs the sidecar from it, and it refuses bad input as the sources do', () => {
    const bundled = runSidecar();
    expect(bundled.loaded).to.deep.equal(['dist/sidecar.js']);
    const sources = runSidecar({ POOL_MONITOR_SOURCES: '1' });
    expect(sources.loaded).to.include('src/cli/sidecar.ts');
    expect(bundled.stderr).to.match(/^pool-monitor: .*absent/);
    expect(bundled.stderr).to.equal(sources.stderr);
  });

  it('a source newer than the bundle sends the sidecar back to the sources', () => {
    const now = new Date();
    utimesSync(join(dir, 'src/cli/sidecar.ts'), now, new Date(now.getTime() + 1000));
    const { loaded } = runSidecar();
    expect(loaded).to.include('src/cli/sidecar.ts');
    expect(loaded).not.to.include('dist/sidecar.js');
  });
});
