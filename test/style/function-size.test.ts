// The house rule "small files: no source file over 400 lines holds a single
// function over 120 lines", checked on src and harness with the compiler's parser.
import { expect } from 'chai';
import { longClassesIn, longFunctionsIn } from '../support/long-functions.ts';

describe('source files: no long function in a long file', () => {
  it('finds none in src or harness', () => {
    const found = longFunctionsIn(['src', 'harness']);
    const said = found.map((f) => `${f.file}: ${f.name} (${f.lines} lines)`);
    expect(said).to.deep.equal([]);
  });
});

// Classes hold one concern each (issue 40), the product's and the harness's
// doubles (the API server's registry, the ARM emulator) alike.
describe('source files: no class over 300 lines in src or harness', () => {
  it('finds none', () => {
    const said = longClassesIn(['src', 'harness']).map(
      (c) => `${c.file}: ${c.name} (${c.lines} lines)`,
    );
    expect(said).to.deep.equal([]);
  });
});
