// Every link between the project's Markdown files lands: the file is there
// and, for a #fragment, the heading is (as GitHub makes anchors). Documents
// move (a figure to docs/results, a section of the README to docs/design);
// a link left behind fails here rather than for a reader.
import { expect } from 'chai';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../scripts/import-graph.ts';
import { anchors, read, relativeLinks } from '../support/markdown.ts';

const SKIP = new Set(['node_modules', '.git', 'dist', 'coverage', '.state']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const at = path.join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(at);
    return e.name.endsWith('.md') ? [at] : [];
  });
}

describe('Markdown links between the project documents', () => {
  const files = markdownFiles(ROOT);

  it('finds the documents', () => {
    expect(files.map((f) => path.relative(ROOT, f))).to.include.members([
      'README.md',
      'docs/testing.md',
      'docs/decisions/README.md',
    ]);
  });

  it('every relative link names a file that is there, and a heading it has', () => {
    const anchorsOf = new Map<string, Set<string>>();
    const broken: string[] = [];
    for (const file of files) {
      for (const { line, target } of relativeLinks(read(file))) {
        const [to, fragment] = target.split('#') as [string, string | undefined];
        const dest = to === '' ? file : path.resolve(path.dirname(file), decodeURI(to));
        const where = `${path.relative(ROOT, file)}:${line}: ${target}`;
        if (!existsSync(dest)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (!fragment || !dest.endsWith('.md') || !statSync(dest).isFile()) continue;
        if (!anchorsOf.has(dest)) anchorsOf.set(dest, anchors(read(dest)));
        if (!anchorsOf.get(dest)!.has(fragment)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).to.deep.equal([]);
  });
});
