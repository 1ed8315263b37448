// `bin/pool-monitor embedded ...` as a user starts it, its output collected:
// the end-to-end tests that drive a whole embedded cluster from outside.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));

export interface EmbeddedRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

export function startEmbedded(args: string[], env: NodeJS.ProcessEnv): EmbeddedRun {
  const child = spawn(BIN, ['embedded', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}
