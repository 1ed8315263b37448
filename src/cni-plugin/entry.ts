// The plugin's process: stdin and the environment in, one JSON document on
// stdout, exit 0 or 1 (bin/pool-monitor-cni runs this, or dist/cni.cjs, its
// bundle; docs/decisions/0032).
import { readFileSync } from 'node:fs';
import { CniCode, CniError } from './errors.ts';
import { run } from './main.ts';

function readStdin(): string {
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    throw new CniError(
      CniCode.IoFailure,
      `cannot read the network configuration on stdin: ${(err as Error).message}`,
    );
  }
}

// No top-level await: the bundle is CommonJS, which Node starts about 60 ms
// sooner than an ES module, and every ADD and DEL starts one
// (docs/decisions/0032).
void run(process.env, readStdin).then(({ out, code }) => {
  if (out !== undefined) process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exitCode = code;
});
