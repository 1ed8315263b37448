// bin/pool-monitor, the launcher: the node agent gets its V8 options and
// malloc settings (docs/decisions/0026, 0027), the environment's own malloc
// settings win over them, and the other commands get none of them. A
// preload (NODE_OPTIONS) reports what the Node process was started with.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));

interface Launched {
  execArgv: string[];
  arena?: string;
  mmap?: string;
  trim?: string;
}

describe('bin/pool-monitor, the launcher', function () {
  this.timeout(30_000);
  let dir: string;
  let preload: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'pm-launcher-'));
    preload = join(dir, 'report.mjs');
    writeFileSync(
      preload,
      "process.stderr.write('LAUNCHED ' + JSON.stringify({ execArgv: process.execArgv, " +
        'arena: process.env.MALLOC_ARENA_MAX, mmap: process.env.MALLOC_MMAP_THRESHOLD_, ' +
        "trim: process.env.MALLOC_TRIM_THRESHOLD_ }) + '\\n');\n",
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function launch(command: string, env: Record<string, string> = {}): Launched {
    const base = { ...process.env };
    for (const k of ['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_'])
      delete base[k];
    const r = spawnSync(BIN, [command, '--help'], {
      env: { ...base, ...env, NODE_OPTIONS: `--import ${preload}` },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).to.equal(0);
    const line = r.stderr.split('\n').find((l) => l.startsWith('LAUNCHED '));
    expect(line, r.stderr).to.be.a('string');
    return JSON.parse((line as string).slice('LAUNCHED '.length)) as Launched;
  }

  it('starts the sidecar with its V8 options and a lean malloc', () => {
    const l = launch('sidecar');
    expect(l.execArgv).to.include.members([
      '--max-semi-space-size=1',
      '--heap-growing-percent=50',
      '--max-opt=1',
    ]);
    expect({ arena: l.arena, mmap: l.mmap, trim: l.trim }).to.deep.equal({
      arena: '1',
      mmap: '16384',
      trim: '131072',
    });
  });

  it('leaves malloc settings the environment gives as they are', () => {
    const l = launch('sidecar', { MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_ARENA_MAX: '2' });
    expect({ arena: l.arena, mmap: l.mmap, trim: l.trim }).to.deep.equal({
      arena: '2',
      mmap: '65536',
      trim: '131072',
    });
  });

  it('gives the other commands neither', () => {
    const l = launch('fulfiller');
    expect(l.execArgv).to.not.include('--max-opt=1');
    expect(l.execArgv).to.not.include('--max-semi-space-size=1');
    expect([l.arena, l.mmap, l.trim]).to.deep.equal([undefined, undefined, undefined]);
  });
});
