// IPv6 arithmetic and the sparse pool of the CIDR backend (issue 54): RFC
// 5952 text, Azure's five reserved addresses, and a /64 that costs no more
// memory than a /112 (only the addresses in use are kept).
import { expect } from 'chai';
import fc from 'fast-check';
import { isIPv6 } from 'node:net';
import {
  bigToIp6,
  gatewayOf6,
  ip6ToBig,
  isUsable6,
  parseCidr6,
  usableCount6,
} from '../../src/fulfiller/cidr6.ts';
import { SparsePool } from '../../src/fulfiller/pool6.ts';

describe('fulfiller/cidr6: IPv6 subnets', () => {
  it('parses and prints addresses as RFC 5952 says', () => {
    expect(bigToIp6(ip6ToBig('FD00:0010:0240:0000:0000:0000:0000:0001'))).to.equal(
      'fd00:10:240::1',
    );
    expect(bigToIp6(ip6ToBig('::'))).to.equal('::');
    expect(bigToIp6(ip6ToBig('1:0:0:2:0:0:0:3'))).to.equal('1:0:0:2::3');
    expect(bigToIp6(ip6ToBig('::ffff:10.0.0.1'))).to.equal('::ffff:a00:1');
    expect(() => ip6ToBig('10.0.0.1')).to.throw(/invalid IPv6/);
    expect(() => ip6ToBig('fe80::1%eth0')).to.throw(/invalid IPv6/);
  });

  it('property: every 128-bit value prints as an address that parses back to it', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), (v) => {
        const text = bigToIp6(v);
        return isIPv6(text) && ip6ToBig(text) === v;
      }),
    );
  });

  it("a subnet: its gateway, Azure's five reserved addresses, a clear error on anything else", () => {
    const c = parseCidr6('fd00:10:240::/112');
    expect(c.text).to.equal('fd00:10:240::/112');
    expect(gatewayOf6(c)).to.equal('fd00:10:240::1');
    expect(usableCount6(c)).to.equal(65_531n);
    for (const ip of ['fd00:10:240::', 'fd00:10:240::3', 'fd00:10:240::ffff'])
      expect(isUsable6(c, ip6ToBig(ip)), ip).to.equal(false);
    expect(isUsable6(c, ip6ToBig('fd00:10:240::4'))).to.equal(true);
    expect(usableCount6(parseCidr6('fd00::/64'))).to.equal((1n << 64n) - 5n);
    expect(() => parseCidr6('fd00::1/64')).to.throw(/host bits set \(network is fd00::\)/);
    expect(() => parseCidr6('fd00::/126')).to.throw(/no usable address/);
    expect(() => parseCidr6('fd00::/32')).to.throw(/shorter than \/48/);
    expect(() => parseCidr6('fd00::')).to.throw(/expected address\/prefix/);
  });

  it('the pool of a /64 holds only what is in use, next-fit, never a reserved address', () => {
    const pool = new SparsePool(parseCidr6('fd00:10:240::/64'));
    const first = pool.allocate(3);
    expect(first).to.deep.equal(['fd00:10:240::4', 'fd00:10:240::5', 'fd00:10:240::6']);
    pool.release('fd00:10:240::5');
    expect(pool.pick(1)).to.deep.equal(['fd00:10:240::7']); // next-fit: the freed one later
    expect(pool.inUse).to.equal(2);
    expect(pool.free).to.equal(Number((1n << 64n) - 5n - 2n));
    expect(pool.markUsed('fd00:10:241::1'), 'outside the subnet').to.equal(false);
    expect(pool.markUsed('fd00:10:240::2'), 'reserved').to.equal(false);
  });

  it('property: a small pool never hands out a used, reserved or repeated address, and fills up', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(6), fc.boolean()), { maxLength: 40 }), (ops) => {
        const c = parseCidr6('fd00::/124'); // 16 addresses, 11 usable
        const pool = new SparsePool(c);
        const held = new Set<string>();
        for (const [n, release] of ops) {
          if (release && held.size > 0) {
            const ip = [...held][n % held.size]!;
            pool.release(ip);
            held.delete(ip);
            continue;
          }
          const got = pool.allocate(n);
          expect(got.length).to.equal(Math.min(n, 11 - held.size));
          for (const ip of got) {
            expect(held.has(ip), ip).to.equal(false);
            expect(isUsable6(c, ip6ToBig(ip)), ip).to.equal(true);
            held.add(ip);
          }
        }
      }),
    );
  });
});
