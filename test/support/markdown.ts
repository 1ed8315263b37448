// Reading the project's Markdown as GitHub renders it: its headings' anchors
// (github-slugger's rule: lower case, every character but letters, marks,
// numbers, connector punctuation, spaces and hyphens dropped, spaces to
// hyphens, a repeated heading suffixed -1, -2, ...) and its relative links,
// outside code blocks and code spans.
import { readFileSync } from 'node:fs';

/** The text a reader sees: fenced code blocks blanked, line count kept. */
export function proseLines(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && open) {
      fence = open[1]![0]!.repeat(open[1]!.length);
      return '';
    }
    if (fence !== undefined) {
      if (line.trimStart().startsWith(fence)) fence = undefined;
      return '';
    }
    return line;
  });
}

/** A heading's anchor as GitHub makes it, before de-duplication. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file has (ATX headings; repeated ones suffixed). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(text)) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export interface Link {
  line: number;
  target: string;
}

/** The links of a Markdown file that point inside the repository (no scheme). */
export function relativeLinks(text: string): Link[] {
  const links: Link[] = [];
  proseLines(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push({ line: i + 1, target });
    }
  });
  return links;
}

export const read = (file: string): string => readFileSync(file, 'utf8');
