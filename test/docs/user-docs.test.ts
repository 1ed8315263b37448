// The README is a user's document (issue 56): one page a user reads in a
// sitting, at most 450 lines; its first sections say what the product is and
// where it fits, so its first screen answers "is this for me?"; then the
// sections a user looks for, in a user's order. Neither it nor
// docs/testing.md carries a run time or a test count that goes stale with
// the next change: the commands print those (make unit, make test-count).
import { expect } from 'chai';
import path from 'node:path';
import { ROOT } from '../../scripts/import-graph.ts';
import { proseLines, read } from '../support/markdown.ts';

const README = read(path.join(ROOT, 'README.md'));
const headings = (level: string): string[] =>
  proseLines(README)
    .filter((l) => l.startsWith(`${level} `))
    .map((l) => l.slice(level.length + 1).trim());

describe('README.md: a user document', () => {
  it('is at most 450 lines', () => {
    expect(README.trimEnd().split('\n').length).to.be.at.most(450);
  });

  it('opens with what it is and where it fits, on the first screen', () => {
    expect(headings('##').slice(0, 2)).to.deep.equal(['What it is', 'Where it fits']);
    const at = README.split('\n').indexOf('## Where it fits');
    expect(at, 'line of "## Where it fits"').to.be.within(0, 40);
  });

  it('has the sections a user looks for, in that order', () => {
    const want = [
      'Quick start',
      'Install',
      'Upgrade',
      'Uninstall',
      'On any cluster',
      'On Azure',
      'Operate',
      'Security',
      'Commands',
    ];
    const all = [...headings('##'), ...headings('###')];
    const order = proseLines(README)
      .filter((l) => /^#{2,3} /.test(l))
      .map((l) => l.replace(/^#+ /, '').trim());
    for (const w of want) expect(all, w).to.include(w);
    const positions = want.map((w) => order.indexOf(w));
    expect(positions).to.deep.equal([...positions].sort((a, b) => a - b));
  });
});

describe('no figure that rots in README.md and docs/testing.md', () => {
  // Run times measured and test counts: "took 3 min 33 s", "1,380 tests".
  const rotting = [
    /\b(took|takes|taking|measured)\b[^.]*\b\d[\d.,]*\s*(s|ms|min|minutes|seconds)\b/i,
    /\b\d+ min \d+ s\b/,
    /\b\d[\d,]*\s+(tests|test files|pending)\b/,
  ];
  for (const file of ['README.md', 'docs/testing.md']) {
    it(`${file} names the command, not the figure`, () => {
      const found = proseLines(read(path.join(ROOT, file)))
        .map((l, i) => ({ l, i }))
        .filter(({ l }) => rotting.some((re) => re.test(l)))
        .map(({ l, i }) => `${file}:${i + 1}: ${l.trim()}`);
      expect(found).to.deep.equal([]);
    });
  }
});
