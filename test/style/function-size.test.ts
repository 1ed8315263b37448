// The house rule "small files: no source file over 400 lines holds a single
// function over 120 lines", checked on src and harness with the compiler's parser.
import { expect } from 'chai';
import { longFunctionsIn } from '../support/long-functions.ts';

describe('source files: no long function in a long file', () => {
  it('finds none in src or harness', () => {
    const found = longFunctionsIn(['src', 'harness']);
    const said = found.map((f) => `${f.file}: ${f.name} (${f.lines} lines)`);
    expect(said).to.deep.equal([]);
  });
});
