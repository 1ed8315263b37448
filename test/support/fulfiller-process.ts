// `bin/pool-monitor fulfiller` as a child process for tests: its JSON log
// lines, its --listen URL, and its exit.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.ts';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));

export interface LogLine {
  msg?: string;
  ts?: string;
  [key: string]: unknown;
}

export interface FulfillerProcess {
  child: ChildProcess;
  name: string;
  lines: LogLine[];
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** The first log line with this message (waits for it). */
  waitLog(msg: string, timeoutMs?: number, where?: (l: LogLine) => boolean): Promise<LogLine>;
  /** The --listen URL, once it listens. */
  url(): Promise<string>;
}

export function spawnFulfiller(
  name: string,
  args: string[],
  env: Record<string, string> = {},
): FulfillerProcess {
  const child = spawn(BIN, ['fulfiller', '--listen', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, POD_NAME: name, ...env },
  });
  const lines: LogLine[] = [];
  let raw = '';
  let partial = '';
  child.stdout!.on('data', (b: Buffer) => {
    raw += b.toString();
    partial += b.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const p of parts) {
      try {
        lines.push(JSON.parse(p) as LogLine);
      } catch {
        lines.push({ msg: p });
      }
    }
  });
  child.stderr!.on('data', (b: Buffer) => (raw += b.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const waitLog = (msg: string, timeoutMs = 15_000, where: (l: LogLine) => boolean = () => true) =>
    waitFor(`${name}: "${msg}"`, () => lines.find((l) => l.msg === msg && where(l)), timeoutMs);
  return {
    child,
    name,
    lines,
    output: () => raw,
    exited,
    waitLog,
    url: async () => (await waitLog('listening')).url as string,
  };
}
