import { expect } from 'chai';
import fc from 'fast-check';
import {
  contains,
  firstUsable,
  gatewayOf,
  intToIp,
  ipToInt,
  isUsable,
  lastUsable,
  parseCidr,
  usableCount,
} from '../../src/fulfiller/cidr.ts';

describe('fulfiller/cidr', () => {
  it('parses a /16 and applies the Azure reservations', () => {
    const c = parseCidr('10.240.0.0/16');
    expect(c.text).to.equal('10.240.0.0/16');
    expect(c.size).to.equal(65536);
    expect(intToIp(firstUsable(c))).to.equal('10.240.0.4');
    expect(intToIp(lastUsable(c))).to.equal('10.240.255.254');
    expect(usableCount(c)).to.equal(65531);
    expect(gatewayOf(c)).to.equal('10.240.0.1');
    for (const reserved of [
      '10.240.0.0',
      '10.240.0.1',
      '10.240.0.2',
      '10.240.0.3',
      '10.240.255.255',
    ]) {
      expect(isUsable(c, ipToInt(reserved)), reserved).to.equal(false);
      expect(contains(c, ipToInt(reserved))).to.equal(true);
    }
    expect(contains(c, ipToInt('10.241.0.0'))).to.equal(false);
  });

  it('rejects bad input with clear messages', () => {
    expect(() => parseCidr('10.240.0.0')).to.throw(/expected address\/prefix/);
    expect(() => parseCidr('10.240.0.1/16')).to.throw(/host bits set \(network is 10.240.0.0\)/);
    expect(() => parseCidr('10.240.0.0/30')).to.throw(/no usable address/);
    expect(() => parseCidr('300.0.0.0/16')).to.throw(/invalid IPv4/);
    expect(() => parseCidr('10.0.0.0/x')).to.throw(/bad prefix/);
    expect(() => ipToInt('1.2.3')).to.throw(/invalid IPv4/);
  });

  it('/29 is the smallest subnet: three usable addresses', () => {
    expect(usableCount(parseCidr('192.168.1.8/29'))).to.equal(3);
  });

  it('round-trips every 32-bit value', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (v) => ipToInt(intToIp(v)) === v),
    );
  });
});
