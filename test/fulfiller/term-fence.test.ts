import { expect } from 'chai';
import { TermFence } from '../../src/fulfiller/term-fence.ts';

/** A view over fixed versions that counts how often it is asked. */
function countingView(versions: Map<string, bigint>): {
  version(name: string): bigint | undefined;
  asked: number;
} {
  const view = {
    asked: 0,
    version(name: string): bigint | undefined {
      view.asked++;
      return versions.get(name);
    },
  };
  return view;
}

const listed = (n: number): Array<[string, bigint]> =>
  Array.from({ length: n }, (_, i): [string, bigint] => [`node-${i}`, 10n]);

describe('fulfiller/term-fence', () => {
  it('lets an NNC out once it is read at a newer version or deleted', () => {
    const versions = new Map(listed(3));
    const view = countingView(versions);
    const fence = new TermFence(listed(3), 0, 60_000);
    expect(fence.unfenced(view, 1)).to.deep.equal(['node-0', 'node-1', 'node-2']);
    versions.set('node-0', 11n);
    versions.delete('node-1');
    expect(fence.unfenced(view, 2)).to.deep.equal(['node-2']);
    expect(fence.isOpen(view, 2, 'node-0')).to.equal(false);
    expect(fence.isOpen(view, 2, 'node-2')).to.equal(true);
    expect(fence.waitReason(view, 2, 'node-2')).to.equal(undefined);
    expect(fence.waitReason(view, 2, 'node-0')).to.match(/node-2/);
    expect(fence.done).to.equal(false);
  });

  it('ends at the request timeout whatever was read', () => {
    const view = countingView(new Map(listed(2)));
    const fence = new TermFence(listed(2), 1000, 60_000);
    expect(fence.waitReason(view, 60_999, 'node-0')).to.match(/node-1/);
    expect(fence.waitReason(view, 61_000, 'node-0')).to.equal(undefined);
    expect(fence.isOpen(view, 61_000, 'node-1')).to.equal(false);
    expect(fence.done).to.equal(true);
  });

  it('says how many NNCs a new address waits for, at most', () => {
    const view = countingView(new Map(listed(5)));
    const fence = new TermFence(listed(5), 0, 60_000);
    const why = fence.waitReason(view, 1, 'node-0') ?? '';
    expect(why).to.match(/node-1, node-2, node-3, \.\.\./);
    expect(why).to.match(/up to 4 NodeNetworkConfig/);
  });

  it('answers each node of a 5,000-node term in constant time, not by reading every NNC', () => {
    // The new leader of 5,000 filled NNCs: every node's round asks whether it
    // may allocate while nothing has moved yet. One pass over the NNCs per
    // node is 25 million version reads a round; a few per node is enough.
    const n = 5000;
    const view = countingView(new Map(listed(n)));
    const fence = new TermFence(listed(n), 0, 60_000);
    for (let i = 0; i < n; i++) expect(fence.waitReason(view, 1, `node-${i}`)).to.be.a('string');
    for (let i = 0; i < n; i++) expect(fence.isOpen(view, 1, `node-${i}`)).to.equal(true);
    expect(fence.openBeyond(view, 1, undefined, 1)).to.have.length(2);
    expect(view.asked).to.be.at.most(10 * n);
  });

  it('prunes what moved as it meets it, so each NNC is let out once', () => {
    const n = 5000;
    const versions = new Map(listed(n));
    const view = countingView(versions);
    const fence = new TermFence(listed(n), 0, 60_000);
    // The new term moves every NNC, one by one; after each, the fulfiller
    // asks whether at most one is left open.
    for (let i = 0; i < n; i++) {
      versions.set(`node-${i}`, 11n);
      fence.openBeyond(view, 1, undefined, 1);
    }
    expect(fence.openBeyond(view, 1, undefined, 1)).to.deep.equal([]);
    expect(view.asked).to.be.at.most(10 * n);
  });
});
