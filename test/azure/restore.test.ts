// What a round does when ARM refuses an address it tries to put back
// (restore.ts): the address ARM's message names is dropped from the restore
// and reported lost, the rest tried again; never a loop, never the node
// blocked by one taken address (issue 53).
import { expect } from 'chai';
import fc from 'fast-check';
import { Restoration, restoreRefusal } from '../../src/azure/restore.ts';

const NIC = '/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkInterfaces';
const allocated = (ip: string) => ({
  statusCode: 400,
  code: 'PrivateIPAddressIsAllocated',
  // ARM's message, as daniel-rhoades/acs-engine-terraform#10 quotes it.
  message: `IP configuration ${NIC}/node-0-nic/ipConfigurations/2b5d3c10-0000-4000-8000-000000000001 is using the private IP address ${ip} which is already allocated to resource ${NIC}/node-1-nic.`,
});

describe('restoring addresses another writer removed', () => {
  it("reads the address out of ARM's refusals; other errors are not refusals", () => {
    expect(restoreRefusal(allocated('10.240.0.12'))).to.deep.equal({
      code: 'PrivateIPAddressIsAllocated',
      ip: '10.240.0.12',
    });
    expect(
      restoreRefusal({
        code: 'PrivateIPAddressInReservedRange',
        message:
          'Private static IP address 10.240.0.3 falls within reserved IP range of subnet prefix 10.240.0.0/16.',
      }),
    ).to.deep.equal({ code: 'PrivateIPAddressInReservedRange', ip: '10.240.0.3' });
    expect(
      restoreRefusal({ code: 'PrivateIPAddressNotInSubnet', message: 'no address' }),
    ).to.deep.equal({
      code: 'PrivateIPAddressNotInSubnet',
    });
    expect(restoreRefusal({ code: 'SubnetIsFull', message: '10.240.0.12' })).to.equal(undefined);
    expect(restoreRefusal(new Error('socket hang up'))).to.equal(undefined);
  });

  it('drops just the address ARM names; the others stay to be restored', () => {
    const fix = new Restoration(
      [
        { name: 'a', ip: '10.240.0.10' },
        { name: 'b', ip: '10.240.0.11' },
        { name: 'c', ip: '10.240.0.12' },
      ],
      true,
    );
    expect(fix.refused(allocated('10.240.0.11'))).to.equal(true);
    expect(fix.restore.map((r) => r.name)).to.deep.equal(['a', 'c']);
    expect(fix.lost.map((r) => r.name)).to.deep.equal(['b']);
    expect(fix.replacements).to.equal(1);
    // A refusal naming none of them: none can be trusted, all lost (the round still writes).
    expect(fix.refused({ code: 'PrivateIPAddressIsAllocated', message: 'taken' })).to.equal(true);
    expect(fix.restore).to.deep.equal([]);
    expect(fix.refused(allocated('10.240.0.10'))).to.equal(false);
  });

  it('any sequence of refusals ends within one PUT per address to restore (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 4, max: 250 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 }),
        (hosts, refusals) => {
          const missing = hosts.map((h) => ({ name: `n${h}`, ip: `10.240.0.${h}` }));
          const fix = new Restoration(missing, true);
          let puts = 0;
          for (const r of refusals) {
            if (!fix.refused(allocated(`10.240.0.${r}`))) break;
            puts++;
          }
          expect(puts).to.be.at.most(hosts.length);
          expect(fix.restore.length + fix.lost.length).to.equal(hosts.length);
        },
      ),
    );
  });
});
