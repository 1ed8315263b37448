import { expect } from 'chai';
import {
  AddressLedger,
  isNewer,
  rvNumber,
  UNANSWERED_WRITE_MS,
} from '../../src/fulfiller/ledger.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';

const nnc = (name: string, rv: string, ips: string[], uid = `uid-${name}`): NodeNetworkConfig => ({
  metadata: { name, uid, resourceVersion: rv },
  status: {
    networkContainers: [
      {
        id: 'nc',
        primaryIP: ips[0],
        ipAssignments: ips.slice(1).map((ip, i) => ({ name: `id-${i}`, ip })),
      },
    ],
  },
});

describe('fulfiller/ledger', () => {
  it('reads resourceVersions as numbers; unknown ones always count as newer', () => {
    expect(rvNumber('42')).to.equal(42n);
    expect(rvNumber('x1')).to.equal(undefined);
    expect(isNewer(5n, 4n)).to.equal(true);
    expect(isNewer(4n, 4n)).to.equal(false);
    expect(isNewer(undefined, 4n)).to.equal(true);
  });

  it('an older or equal version changes nothing; a newer one replaces the addresses', () => {
    const l = new AddressLedger();
    const changes: string[] = [];
    l.subscribe((ip, used) => changes.push(`${used ? '+' : '-'}${ip}`));
    expect(l.observe(nnc('a', '5', ['10.0.0.4', '10.0.0.5']))).to.equal(true);
    expect(l.observe(nnc('a', '7', ['10.0.0.4']))).to.equal(true);
    expect(l.observe(nnc('a', '6', ['10.0.0.4', '10.0.0.5']))).to.equal(false);
    expect(l.observe(nnc('a', '7', ['10.0.0.4', '10.0.0.9']))).to.equal(false);
    expect(l.isUsed('10.0.0.5')).to.equal(false);
    expect(changes).to.deep.equal(['+10.0.0.4', '+10.0.0.5', '-10.0.0.5']);
  });

  it('a claim based on version B settles when a newer version is read, not before', () => {
    const l = new AddressLedger();
    l.observe(nnc('a', '5', ['10.0.0.4']));
    l.claim('a', ['10.0.0.6'], '5');
    expect(l.inDoubt('a')).to.equal(true);
    l.observe(nnc('a', '5', ['10.0.0.4']));
    expect(l.isUsed('10.0.0.6')).to.equal(true);
    l.observe(nnc('a', '8', ['10.0.0.4'])); // moved on without it: it can never land
    expect(l.isUsed('10.0.0.6')).to.equal(false);
    expect(l.inDoubt('a')).to.equal(false);
    // A reservation without a version is never settled by a read.
    l.claim('a', ['10.0.0.7']);
    l.observe(nnc('a', '9', ['10.0.0.4']));
    expect(l.isUsed('10.0.0.7')).to.equal(true);
    l.unclaim('a', ['10.0.0.7']);
    expect(l.isUsed('10.0.0.7')).to.equal(false);
  });

  it('a write in doubt keeps its claims while a read at its base version is younger than the request timeout', () => {
    const l = new AddressLedger();
    l.observe(nnc('a', '5', ['10.0.0.4']));
    l.claim('a', ['10.0.0.6'], '5');
    l.doubt('a', ['10.0.0.6'], '5', 1_000, 504);
    // Read again at its base: it has not landed yet, and still may.
    expect(l.settleUnanswered('a', '5', 1_000 + UNANSWERED_WRITE_MS - 1)).to.equal(false);
    expect(l.isUsed('10.0.0.6')).to.equal(true);
    // Once the timeout is over it never will, whatever the 504 said.
    expect(l.settleUnanswered('a', '5', 1_000 + UNANSWERED_WRITE_MS)).to.equal(true);
    expect(l.isUsed('10.0.0.6')).to.equal(false);
    expect(l.inDoubt('a')).to.equal(false);
    // Gone with its claims: a later read frees nothing more.
    expect(l.settleUnanswered('a', '5', 1_000 + 2 * UNANSWERED_WRITE_MS)).to.equal(false);
  });

  it('a newer version read settles a write in doubt at once, landed or not', () => {
    const l = new AddressLedger();
    l.observe(nnc('a', '5', ['10.0.0.4']));
    l.claim('a', ['10.0.0.6', '10.0.0.7'], '5');
    l.doubt('a', ['10.0.0.6', '10.0.0.7'], '5', 1_000);
    // Long before the timeout: the status moved on, holding one of them.
    l.observe(nnc('a', '6', ['10.0.0.4', '10.0.0.6']));
    expect(l.inDoubt('a')).to.equal(false);
    expect(l.isUsed('10.0.0.6')).to.equal(true);
    expect(l.isUsed('10.0.0.7')).to.equal(false);
    expect(l.settleUnanswered('a', '6', 1_001)).to.equal(false);
  });

  it('a deleted NNC keeps its addresses while its Node lives, until recreated or the Node is gone', () => {
    const l = new AddressLedger();
    l.observe(nnc('a', '5', ['10.0.0.4', '10.0.0.5']));
    l.deleted(nnc('a', '6', ['10.0.0.4', '10.0.0.5']), true);
    expect(l.nnc('a')).to.equal(undefined);
    expect(l.retained('a')?.[0]?.primaryIP).to.equal('10.0.0.4');
    expect(l.isUsed('10.0.0.5')).to.equal(true);
    // A late event of the deleted incarnation is ignored.
    expect(l.observe(nnc('a', '5', ['10.0.0.4']))).to.equal(false);
    // Its successor (a new uid) starts empty: the addresses stay kept.
    l.observe(nnc('a', '9', [], 'uid-a2'));
    expect(l.isUsed('10.0.0.5')).to.equal(true);
    l.forgetNode('a');
    expect(l.isUsed('10.0.0.5')).to.equal(false);
    // Deleting an older incarnation does not touch the current one.
    l.observe(nnc('a', '10', ['10.0.0.8'], 'uid-a2'));
    expect(l.deleted(nnc('a', '6', [], 'uid-a'), false)).to.equal(false);
    expect(l.isUsed('10.0.0.8')).to.equal(true);
  });

  it('counts holders and reports addresses on two NNCs', () => {
    const l = new AddressLedger();
    l.observe(nnc('a', '1', ['10.0.0.4', '10.0.0.5']));
    l.observe(nnc('b', '2', ['10.0.0.6', '10.0.0.5']));
    expect(l.holders('10.0.0.5')).to.equal(2);
    expect(l.conflicts()).to.deep.equal(['10.0.0.5']);
    expect([...l.used()].sort()).to.deep.equal(['10.0.0.4', '10.0.0.5', '10.0.0.6']);
  });
});
