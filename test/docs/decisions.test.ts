// The decision records (docs/decisions/README.md, "Writing one"): each in one
// shape, Status first, one page; the index lists every record with the
// status the record gives itself; and a record superseded (whole or in part)
// names the record that supersedes it, which names it back.
import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../scripts/import-graph.ts';
import { proseLines, read } from '../support/markdown.ts';

const DIR = path.join(ROOT, 'docs/decisions');
const records = readdirSync(DIR)
  .filter((f) => /^\d{4}-.*\.md$/.test(f))
  .sort()
  .map((file) => ({ file, id: file.slice(0, 4), text: read(path.join(DIR, file)) }));

const SECTIONS = ['Status', 'Context', 'Decision', 'Consequences'];
const DATE = String.raw`\d{4}-\d{2}-\d{2}`;

interface Status {
  state: 'Accepted' | 'Superseded';
  by?: string;
  /** The records that supersede parts of it (said once: "Superseded in part by [A] ...; and by [B] ..."). */
  inPart: string[];
  supersedes: string[];
  supersedesPart: string[];
}

/** The Status section's text, joined into one line. */
function statusText(text: string): string {
  const m = /^## Status\n\n([\s\S]*?)\n\n## /m.exec(text);
  return (m?.[1] ?? '').replace(/\s*\n\s*/g, ' ');
}

function status(text: string): Status | undefined {
  const s = statusText(text);
  const ids = (re: RegExp): string[] => [...s.matchAll(re)].map((m) => m[1]!);
  const whole = new RegExp(`^Superseded by \\[(\\d{4})\\]\\(\\d{4}-[^)]+\\.md\\), ${DATE}\\.`).exec(
    s,
  );
  if (whole)
    return { state: 'Superseded', by: whole[1]!, inPart: [], supersedes: [], supersedesPart: [] };
  if (!new RegExp(`^Accepted, ${DATE}\\.`).test(s)) return undefined;
  const part = /Superseded in part by .*/.exec(s)?.[0] ?? '';
  return {
    state: 'Accepted',
    inPart: [...part.matchAll(/(?:Superseded in part by|and by) \[(\d{4})\]/g)].map((m) => m[1]!),
    supersedes: ids(/Supersedes \[(\d{4})\]/g),
    supersedesPart: ids(/(?:Supersedes|and) part of \[(\d{4})\]/g),
  };
}

describe('docs/decisions: every record in one shape', () => {
  it('finds the records', () => {
    expect(records.length).to.be.greaterThan(30);
  });

  for (const r of records) {
    it(`${r.file}: its title, then Status, Context, Decision, Consequences`, () => {
      const lines = proseLines(r.text);
      expect(lines[0], 'the title').to.match(new RegExp(`^# ${r.id} — \\S`));
      const h2 = lines.filter((l) => l.startsWith('## ')).map((l) => l.slice(3).trim());
      expect(h2).to.deep.equal(SECTIONS);
      expect(lines[2], 'Status comes first').to.equal('## Status');
    });

    it(`${r.file}: a Status with its date, a partial supersession said once`, () => {
      expect(status(r.text), statusText(r.text)).to.not.equal(undefined);
      expect(r.text.match(/Superseded in part/g) ?? []).to.have.length.at.most(1);
    });

    it(`${r.file}: one page (at most 200 lines)`, () => {
      expect(r.text.trimEnd().split('\n').length).to.be.at.most(200);
    });
  }

  it('a superseded record and the one superseding it name each other', () => {
    const byId = new Map(records.map((r) => [r.id, status(r.text)!]));
    const broken: string[] = [];
    for (const [id, s] of byId) {
      if (s.by && !byId.get(s.by)?.supersedes.includes(id)) broken.push(`${s.by} supersedes ${id}`);
      for (const p of s.inPart)
        if (!byId.get(p)?.supersedesPart.includes(id)) broken.push(`${p} supersedes part of ${id}`);
      for (const o of s.supersedes)
        if (byId.get(o)?.by !== id) broken.push(`${o} superseded by ${id}`);
      for (const o of s.supersedesPart)
        if (!byId.get(o)?.inPart.includes(id)) broken.push(`${o} superseded in part by ${id}`);
    }
    expect(broken, 'said on one side only').to.deep.equal([]);
  });
});

describe('docs/decisions/README.md: the index', () => {
  const index = read(path.join(DIR, 'README.md'));
  const rows = [
    ...index.matchAll(/^\| \[(\d{4})\]\((\d{4}-[^)]+\.md)\) \| ([^|]+) \| ([^|]+) \|$/gm),
  ];

  it('lists every record once, in order, linked to its file, with one line each', () => {
    expect(rows.map((m) => m[2])).to.deep.equal(records.map((r) => r.file));
    for (const m of rows) expect(m[4]!.trim(), m[1]).to.not.equal('');
  });

  it('gives each record the status the record gives itself', () => {
    const wrong: string[] = [];
    for (const m of rows) {
      const r = records.find((x) => x.id === m[1])!;
      const s = status(r.text)!;
      const want =
        s.state === 'Superseded'
          ? `Superseded by ${s.by}`
          : s.inPart.length > 0
            ? `Accepted, in part superseded by ${s.inPart.join(' and ')}`
            : 'Accepted';
      if (m[3]!.trim() !== want)
        wrong.push(`${r.id}: "${m[3]!.trim()}", the record says "${want}"`);
    }
    expect(wrong).to.deep.equal([]);
  });
});
