// Which run produced a bench's figures: when, on which commit, how loaded the
// machine was (times depend on it; memory figures do not). Each bench prints
// this line above its figures, and each figure next to its goal.
import { execFileSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';

export function runInfo(): string {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
    });
    if (dirty.trim() !== '') commit += '+changes';
  } catch {
    // not a git checkout: the commit stays unknown
  }
  const load = loadavg().map((l) => l.toFixed(2));
  return `run ${new Date().toISOString()} commit ${commit}, ${availableParallelism()} cores, load ${load.join(' ')}`;
}

/** "figure (goal ...: met|MISSED)". */
export function againstGoal(figure: string, met: boolean, goal: string): string {
  return `${figure}   [goal ${goal}: ${met ? 'met' : 'MISSED'}]`;
}
