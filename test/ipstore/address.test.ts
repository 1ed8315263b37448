import { expect } from 'chai';
import fc from 'fast-check';
import { compareIps, ipSortKey, isIpAddress } from '../../src/ipstore/address.ts';

describe('ipstore/address', () => {
  it('validates addresses', () => {
    expect(isIpAddress('10.0.0.1')).to.equal(true);
    expect(isIpAddress('fd00::1')).to.equal(true);
    expect(isIpAddress('10.0.0.1/24')).to.equal(false);
    expect(isIpAddress('')).to.equal(false);
    expect(isIpAddress(42)).to.equal(false);
  });

  it('orders IPv4 numerically and before IPv6 globals', () => {
    const sorted = ['10.0.0.10', 'fd00::1', '10.0.0.2', '9.255.255.255'].sort(compareIps);
    expect(sorted).to.deep.equal(['9.255.255.255', '10.0.0.2', '10.0.0.10', 'fd00::1']);
  });

  it('gives equal keys to equal IPv6 spellings', () => {
    expect(ipSortKey('fd00:0:0::1')).to.equal(ipSortKey('FD00::0001'));
    expect(ipSortKey('::ffff:10.0.0.1')).to.equal(ipSortKey('10.0.0.1'));
    expect(ipSortKey('::')).to.equal('0'.repeat(32));
  });

  it('IPv4 key order is numeric order (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), (a, b) => {
        const n = (ip: string) => ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
        expect(Math.sign(compareIps(a, b))).to.equal(Math.sign(n(a) - n(b)));
      }),
    );
  });

  it('IPv6 keys are 32 hex digits (property)', () => {
    fc.assert(
      fc.property(fc.ipV6(), (a) => {
        expect(ipSortKey(a)).to.match(/^[0-9a-f]{32}$/);
      }),
    );
  });

  it('refuses non-addresses', () => {
    expect(() => ipSortKey('nope')).to.throw(/not an IP address/);
  });
});
