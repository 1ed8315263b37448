// Where an embedded run's component log goes. The run directory (kubeconfig,
// node state) is scratch in the temp dir and removed when the run ends; the
// log is worth reading afterwards, so by default it goes to the user's state
// directory (XDG: $XDG_STATE_HOME, else ~/.local/state), one file per run,
// the newest few kept.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Log files of earlier runs kept next to a new one. */
export const KEPT_RUN_LOGS = 5;
const RUN_LOG = /^embedded-\d{8}-\d{6}(-\d+)?\.log$/;

/** `$XDG_STATE_HOME/pool-monitor`, else `~/.local/state/pool-monitor`; undefined without either. */
export function stateLogDir(env: Record<string, string | undefined>): string | undefined {
  const xdg = env.XDG_STATE_HOME;
  if (xdg && xdg.startsWith('/')) return join(xdg, 'pool-monitor');
  const home = env.HOME || safeHomedir();
  return home ? join(home, '.local', 'state', 'pool-monitor') : undefined;
}

function safeHomedir(): string | undefined {
  try {
    return homedir() || undefined;
  } catch {
    return undefined;
  }
}

/** `embedded-YYYYMMDD-HHMMSS-PID.log` in UTC. Pure. */
export function runLogName(now: Date, pid: number): string {
  const iso = now.toISOString(); // 2025-01-31T12:34:56.789Z
  const stamp = `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}`;
  return `embedded-${stamp}-${pid}.log`;
}

/** Names of run logs to delete so that `keep` remain, oldest first. Pure. */
export function logsToPrune(names: readonly string[], keep: number): string[] {
  const runs = names.filter((n) => RUN_LOG.test(n)).sort();
  return runs.slice(0, Math.max(0, runs.length - keep));
}

/**
 * A new run log path in the state directory, made and pruned so that with
 * this one at most KEPT_RUN_LOGS + 1 remain; undefined when the directory
 * cannot be made (the caller keeps the log in the run directory then).
 */
export function newRunLogFile(
  env: Record<string, string | undefined>,
  now: Date = new Date(),
  pid: number = process.pid,
): string | undefined {
  const dir = stateLogDir(env);
  if (dir === undefined) return undefined;
  try {
    mkdirSync(dir, { recursive: true });
    for (const old of logsToPrune(readdirSync(dir), KEPT_RUN_LOGS)) {
      rmSync(join(dir, old), { force: true });
    }
  } catch {
    return undefined;
  }
  return join(dir, runLogName(now, pid));
}
