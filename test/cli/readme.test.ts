// The README's command reference is complete: every command `--help` lists has
// a section (### `bin/pool-monitor COMMAND`) whose synopsis (the first code
// block under it) names every flag its `--help` prints, with the default when
// the help gives a literal one. A flag added without the README fails here.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const BIN = new URL('../../bin/pool-monitor', import.meta.url).pathname;
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function help(...args: string[]): string {
  const r = spawnSync(BIN, [...args, '--help'], { encoding: 'utf8', timeout: 30_000 });
  expect(r.status, r.stderr).to.equal(0);
  return r.stdout;
}

interface HelpOption {
  flag: string;
  /** The default as help prints it, when it is one literal value. */
  literal?: string;
}

/** The options of a help text, wrapped description lines joined. */
function helpOptions(text: string): HelpOption[] {
  const block = text.split(/^Options:$/m)[1]?.split(/^\S.*:$/m)[0] ?? '';
  const entries: string[] = [];
  for (const line of block.split('\n')) {
    if (/^ {2}-/.test(line)) entries.push(line.trim());
    else if (line.trim() !== '' && entries.length > 0)
      entries[entries.length - 1] += ` ${line.trim()}`;
  }
  return entries
    .map((e) => {
      const flag = /(--[\w-]+)/.exec(e)?.[1] ?? '';
      const def = /\(default: ([^)]*)\)$/.exec(e)?.[1]?.replace(/^.*default: /, '');
      const first = def?.split(', ')[0];
      const literal = first !== undefined && !/\s|^\$/.test(first) ? first : undefined;
      return { flag, ...(literal !== undefined ? { literal } : {}) };
    })
    .filter((o) => o.flag !== '--help' && o.flag !== '--version');
}

/** The synopsis of a command's README section: its first code block, lines joined. */
function synopsis(command: string): string | undefined {
  const lines = README.split('\n');
  const at = lines.indexOf(`### \`bin/pool-monitor ${command}\``);
  if (at < 0) return undefined;
  const open = lines.findIndex((l, i) => i > at && l.startsWith('```'));
  const next = lines.findIndex((l, i) => i > at && l.startsWith('#'));
  if (open < 0 || (next >= 0 && next < open)) return undefined;
  const close = lines.findIndex((l, i) => i > open && l.startsWith('```'));
  return lines
    .slice(open + 1, close)
    .map((l) => l.trim())
    .join(' ');
}

describe('README: the command reference', function () {
  this.timeout(60_000);
  const commands = /^Commands:\n([\s\S]*)$/m
    .exec(help())![1]!
    .split('\n')
    .map((l) => /^ {2}([a-z-]+)/.exec(l)?.[1])
    .filter((c): c is string => c !== undefined && c !== 'help');

  it('lists the commands', () => {
    expect(commands).to.include.members([
      'apiserver',
      'embedded',
      'fulfiller',
      'simulate',
      'sidecar',
    ]);
  });

  for (const command of ['apiserver', 'embedded', 'fulfiller', 'simulate', 'sidecar']) {
    it(`has every flag of ${command} --help, with its default`, () => {
      const text = synopsis(command);
      expect(text, `a README section with a synopsis for ${command}`).to.be.a('string');
      expect(text!.startsWith(`bin/pool-monitor ${command} `), text).to.equal(true);
      const missing: string[] = [];
      for (const o of helpOptions(help(command))) {
        if (!new RegExp(`${o.flag}\\b`).test(text!)) missing.push(o.flag);
        else if (o.literal && !text!.includes(`${o.flag} ${o.literal}`))
          missing.push(`${o.flag} ${o.literal}`);
      }
      expect(missing, `not in the README's ${command} synopsis`).to.deep.equal([]);
    });
  }
});
