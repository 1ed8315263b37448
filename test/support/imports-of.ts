// Runs a command with record-imports.ts loaded first (through NODE_OPTIONS,
// so the node it starts records too): every module URL it resolved, with its
// exit status and stderr.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HOOK = fileURLToPath(new URL('./record-imports.ts', import.meta.url));

export interface ImportsRun {
  status: number | null;
  stderr: string;
  /** Every URL the process resolved, in the order first seen. */
  urls: string[];
}

export function importsOf(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): ImportsRun {
  const dir = mkdtempSync(join(tmpdir(), 'pm-imports-'));
  try {
    const file = join(dir, 'imports.txt');
    const r = spawnSync(command, args, {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: `--import=${HOOK}`, RECORD_IMPORTS_FILE: file, ...env },
    });
    let urls: string[] = [];
    try {
      urls = readFileSync(file, 'utf8').split('\n');
    } catch {
      // the process ended before it could write them
    }
    return { status: r.status, stderr: r.stderr, urls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
