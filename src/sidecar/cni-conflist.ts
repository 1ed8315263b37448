// The CNI configuration the DaemonSet installs when the overlay asks for one
// (docs/decisions/0037), as Calico's install-cni and Cilium's installer
// write theirs: the overlay's ConfigMap holds one key, the conflist's file
// name (`10-pool-monitor.conflist`), and its text is written byte for byte
// into the host's /etc/cni/net.d under a temporary name, then renamed, so a
// runtime reads the old file or the new one. Never over a configuration it
// did not write: what it wrote is recorded beside it (RECORD: the SHA-256
// and the name, as sha256sum prints them; no extension a runtime loads), and
// a file there that is neither what it wrote nor the same bytes stops the
// install with a line saying so. The cleanup DaemonSet removes what the
// record names while it is unchanged. The decision is pure (planInstall,
// planRemove); the file system is touched by the two functions after them.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { extname, join } from 'node:path';
import { writeFileByRename } from '../secrets/private-file.ts';

/** The record of what was installed, in the configuration directory. */
export const RECORD = '.pool-monitor-installed';
/** The extensions libcni reads as configurations (libcni/conf.go, ConfFiles as runtimes call it). */
export const CONFIG_EXTENSIONS = ['.conf', '.conflist', '.json'];

export class ConflistError extends Error {
  override readonly name = 'ConflistError';
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export interface Installed {
  name: string;
  sha256: string;
}

export function parseRecord(text: string | undefined): Installed | undefined {
  const m = /^([0-9a-f]{64}) {2}(\S+)\n?$/.exec(text ?? '');
  return m ? { sha256: m[1]!, name: m[2]! } : undefined;
}

export const formatRecord = (r: Installed): string => `${r.sha256}  ${r.name}\n`;

/** A conflist's text, checked: JSON with a name, a cniVersion and at least one plugin. */
export function checkConflist(name: string, text: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*\.conflist$/.test(name))
    throw new ConflistError(`${name}: the ConfigMap's key must be a file name ending in .conflist`);
  let conf: unknown;
  try {
    conf = JSON.parse(text);
  } catch (err) {
    throw new ConflistError(`${name}: not JSON (${(err as Error).message})`);
  }
  const c = conf as { name?: unknown; cniVersion?: unknown; plugins?: unknown };
  if (typeof c !== 'object' || c === null || typeof c.name !== 'string' || c.name === '')
    throw new ConflistError(`${name}: a conflist needs a "name"`);
  if (typeof c.cniVersion !== 'string' || c.cniVersion === '')
    throw new ConflistError(`${name}: a conflist needs a "cniVersion"`);
  if (!Array.isArray(c.plugins) || c.plugins.length === 0)
    throw new ConflistError(`${name}: a conflist needs at least one plugin in "plugins"`);
}

export type Step =
  | { kind: 'write'; name: string; text: string }
  | { kind: 'remove'; name: string }
  | { kind: 'record'; record: Installed | undefined };

/**
 * What installing `asked` does, given the record and the files there
 * (`current(name)`: a file's text, undefined when absent). Throws a
 * ConflistError when a file it did not write stands in the way.
 */
export function planInstall(
  asked: { name: string; text: string },
  record: Installed | undefined,
  current: (name: string) => string | undefined,
): Step[] {
  const steps: Step[] = [];
  const want = sha256(asked.text);
  // The overlay renamed it: the file written under the old name goes, if unchanged.
  if (record && record.name !== asked.name) {
    const old = current(record.name);
    if (old !== undefined && sha256(old) === record.sha256)
      steps.push({ kind: 'remove', name: record.name });
  }
  const there = current(asked.name);
  if (there !== undefined && there !== asked.text) {
    const ours = record?.name === asked.name && sha256(there) === record.sha256;
    if (!ours)
      throw new ConflistError(
        `${asked.name} is there and was not written by pool-monitor (or was changed since): ` +
          'nothing written; move it away, or name another file in the ConfigMap',
      );
  }
  if (there !== asked.text) steps.push({ kind: 'write', name: asked.name, text: asked.text });
  steps.push({ kind: 'record', record: { name: asked.name, sha256: want } });
  return steps;
}

/** What the cleanup does: the recorded file goes while it is what was written; the record goes. */
export function planRemove(
  record: Installed | undefined,
  current: (name: string) => string | undefined,
): { steps: Step[]; kept?: string } {
  if (!record) return { steps: [] };
  const there = current(record.name);
  const steps: Step[] = [];
  let kept: string | undefined;
  if (there !== undefined && sha256(there) === record.sha256)
    steps.push({ kind: 'remove', name: record.name });
  else if (there !== undefined) kept = record.name;
  steps.push({ kind: 'record', record: undefined });
  return kept === undefined ? { steps } : { steps, kept };
}

/** The conflist an overlay's ConfigMap asks for (its one key), or undefined when none is mounted. */
export function askedConflist(fromDir: string): { name: string; text: string } | undefined {
  if (!existsSync(fromDir)) return undefined;
  // A ConfigMap volume holds each key as a link into ..data/, beside ..data and a timestamped dir.
  const keys = readdirSync(fromDir).filter((k) => !k.startsWith('..'));
  if (keys.length === 0) return undefined;
  if (keys.length > 1)
    throw new ConflistError(
      `${fromDir}: the ConfigMap must hold one conflist, it holds ${keys.join(', ')}`,
    );
  const name = keys[0]!;
  const text = readFileSync(join(fromDir, name), 'utf8');
  checkConflist(name, text);
  return { name, text };
}

function reader(confDir: string): (name: string) => string | undefined {
  return (name) => {
    try {
      return readFileSync(join(confDir, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  };
}

function apply(confDir: string, steps: Step[], say: (line: string) => void): void {
  for (const step of steps) {
    if (step.kind === 'write') {
      writeFileByRename(join(confDir, step.name), step.text, { mode: 0o644, dirMode: 0o755 });
      say(`wrote ${join(confDir, step.name)}`);
    } else if (step.kind === 'remove') {
      rmSync(join(confDir, step.name), { force: true });
      say(`removed ${join(confDir, step.name)}`);
    } else if (step.record)
      writeFileByRename(join(confDir, RECORD), formatRecord(step.record), {
        mode: 0o644,
        dirMode: 0o755,
      });
    else rmSync(join(confDir, RECORD), { force: true });
  }
}

/** Installs what `fromDir` asks for into `confDir`; says what it did, and which file a runtime picks first. */
export function installConflist(
  fromDir: string,
  confDir: string,
  say: (line: string) => void,
): void {
  const asked = askedConflist(fromDir);
  if (!asked) {
    say(`no CNI configuration asked for (${fromDir} is empty): ${confDir} left as it is`);
    return;
  }
  mkdirSync(confDir, { recursive: true });
  const current = reader(confDir);
  const steps = planInstall(asked, parseRecord(current(RECORD)), current);
  apply(confDir, steps, say);
  if (!steps.some((s) => s.kind === 'write')) say(`${join(confDir, asked.name)} is up to date`);
  // A runtime uses the configuration whose name sorts first (libcni, ConfFiles then sort).
  const first = readdirSync(confDir)
    .filter((f) => !f.startsWith('.') && CONFIG_EXTENSIONS.includes(extname(f)))
    .sort()[0];
  if (first !== undefined && first !== asked.name)
    say(`note: ${first} sorts before ${asked.name}: a runtime uses ${first}`);
}

/** Removes what was installed into `confDir` (the cleanup DaemonSet). */
export function removeConflist(confDir: string, say: (line: string) => void): void {
  if (!existsSync(confDir)) return;
  const current = reader(confDir);
  const { steps, kept } = planRemove(parseRecord(current(RECORD)), current);
  apply(confDir, steps, say);
  if (kept !== undefined) say(`kept ${join(confDir, kept)}: changed since pool-monitor wrote it`);
}
