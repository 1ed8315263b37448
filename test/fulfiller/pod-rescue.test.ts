// Pods as the record of last resort (src/fulfiller/pod-rescue.ts): which
// addresses running pods report that no record holds, and to which node.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  orphanedAddresses,
  withRescued,
  type PodAddresses,
} from '../../src/fulfiller/pod-rescue.ts';
import { CidrBackend } from '../../src/fulfiller/cidr-backend.ts';
import { addressesOf } from '../../src/fulfiller/address-index.ts';
import { NodeBook } from '../../src/fulfiller/node-book.ts';

const inSubnet = (ip: string) => ip.startsWith('10.0.');

describe('pod rescue: orphaned addresses', () => {
  it('keeps for each node the addresses its pods hold that no record has, inside the subnets', () => {
    const pods: PodAddresses[] = [
      { node: 'a', ips: ['10.0.0.5', '10.0.0.6'] },
      { node: 'a', ips: ['10.0.0.7', '192.168.1.1'] }, // another network's: not ours
      { node: 'b', ips: ['10.0.0.9'] }, // recorded
    ];
    const recorded = new Set(['10.0.0.6', '10.0.0.9']);
    const { byNode, contested } = orphanedAddresses(pods, (ip) => recorded.has(ip), inSubnet);
    expect([...byNode]).to.deep.equal([['a', ['10.0.0.5', '10.0.0.7']]]);
    expect(contested).to.deep.equal([]);
  });

  it('gives an address two nodes report to neither', () => {
    const { byNode, contested } = orphanedAddresses(
      [
        { node: 'a', ips: ['10.0.0.5', '10.0.0.8'] },
        { node: 'b', ips: ['10.0.0.5'] },
        { node: 'a', ips: ['10.0.0.8'] }, // two pods of one node: still that node's
      ],
      () => false,
      inSubnet,
    );
    expect([...byNode]).to.deep.equal([['a', ['10.0.0.8']]]);
    expect(contested).to.deep.equal(['10.0.0.5']);
  });

  it('property: every orphan is unrecorded, ours and reported by its node only; nothing else is left out', () => {
    const ip = fc
      .integer({ min: 0, max: 40 })
      .map((i) => (i < 30 ? `10.0.0.${i}` : `172.16.0.${i}`));
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ node: fc.constantFrom('a', 'b', 'c'), ips: fc.array(ip, { maxLength: 4 }) }),
        ),
        fc.uniqueArray(ip),
        (pods, rec) => {
          const recorded = new Set(rec);
          const { byNode, contested } = orphanedAddresses(pods, (x) => recorded.has(x), inSubnet);
          const reporters = new Map<string, Set<string>>();
          for (const p of pods)
            for (const x of p.ips) reporters.set(x, (reporters.get(x) ?? new Set()).add(p.node));
          const given = new Map<string, string>();
          for (const [node, ips] of byNode)
            for (const x of ips) {
              expect(given.has(x), `${x} given twice`).to.equal(false);
              given.set(x, node);
            }
          for (const [x, nodes] of reporters) {
            const orphan = !recorded.has(x) && inSubnet(x);
            if (!orphan) expect(given.has(x) || contested.includes(x)).to.equal(false);
            else if (nodes.size === 1) expect(given.get(x)).to.equal([...nodes][0]);
            else expect(contested).to.include(x);
          }
        },
      ),
    );
  });

  it('a rebuilt CIDR container holds the rescued addresses under a fresh primary and new ids', () => {
    const book = new NodeBook(() => 0);
    let n = 0;
    const backend = new CidrBackend(
      { cidr: '10.0.0.0/29', newId: () => `id-${++n}` },
      book.addresses,
    );
    // 10.0.0.1-6 usable; 10.0.0.1 and .2 are the pods', .3 is recorded elsewhere.
    book.reserve(liveNode(book, 'other'), ['10.0.0.3']);
    const [nc] = backend.rebuild({ name: 'a' }, ['10.0.0.1', '10.0.0.2'])!;
    if (!nc) throw new Error('no container rebuilt');
    expect(nc.primaryIP).to.equal('10.0.0.4');
    expect(nc.ipAssignments!.map((a) => a.ip)).to.deep.equal(['10.0.0.1', '10.0.0.2']);
    expect(new Set([nc.id, ...nc.ipAssignments!.map((a) => a.name)]).size).to.equal(3);
    expect(nc.assignmentMode).to.equal('dynamic');
    // Nothing is taken until the fulfiller keeps it.
    expect(book.addresses.isUsed('10.0.0.4')).to.equal(false);
  });

  it('no primary left: nothing is rebuilt', () => {
    const book = new NodeBook(() => 0);
    const backend = new CidrBackend({ cidr: '10.0.0.0/29' }, book.addresses); // .1 to .6 usable
    book.reserve(liveNode(book, 'other'), ['10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
    expect(backend.rebuild({ name: 'a' }, ['10.0.0.1', '10.0.0.2'])).to.equal(undefined);
  });

  it('rescued addresses join the first kept container', () => {
    let n = 0;
    const kept = [
      { id: 'nc', primaryIP: '10.0.0.1', ipAssignments: [{ name: 'k', ip: '10.0.0.2' }] },
    ];
    const out = withRescued(kept, ['10.0.0.5'], () => `new-${++n}`);
    expect([...addressesOf(out)]).to.deep.equal(['10.0.0.1', '10.0.0.2', '10.0.0.5']);
    expect(out[0]!.ipAssignments![1]!.name).to.equal('new-1');
    expect(kept[0]!.ipAssignments).to.have.length(1); // the input is left as it was
  });
});

/** A record of a live Node of that name in `book` (a Node the watch showed). */
function liveNode(book: NodeBook, name: string) {
  book.streamed('node', { metadata: { name, uid: `uid-${name}`, resourceVersion: '1' } });
  return book.liveRecord(name)!;
}
