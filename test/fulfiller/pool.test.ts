import { expect } from 'chai';
import fc from 'fast-check';
import { ipToInt, isUsable, parseCidr } from '../../src/fulfiller/cidr.ts';
import { SubnetPool } from '../../src/fulfiller/pool.ts';

describe('fulfiller/pool', () => {
  it('hands out next-fit from the first usable address and never reserved ones', () => {
    const pool = new SubnetPool(parseCidr('10.0.0.0/29'));
    expect(pool.capacity).to.equal(3);
    expect(pool.allocate(2)).to.deep.equal(['10.0.0.4', '10.0.0.5']);
    pool.release('10.0.0.4');
    // The cursor moves on: the just-released address comes last.
    expect(pool.allocate(2)).to.deep.equal(['10.0.0.6', '10.0.0.4']);
    expect(pool.free).to.equal(0);
    expect(pool.allocate(5)).to.deep.equal([]);
  });

  it('refuses to mark reserved or foreign addresses', () => {
    const pool = new SubnetPool(parseCidr('10.0.0.0/24'));
    expect(pool.markUsed('10.0.0.1')).to.equal(false);
    expect(pool.markUsed('10.0.0.255')).to.equal(false);
    expect(pool.markUsed('10.0.1.9')).to.equal(false);
    expect(pool.markUsed('garbage')).to.equal(false);
    expect(pool.markUsed('10.0.0.9')).to.equal(true);
    expect(pool.markUsed('10.0.0.9')).to.equal(true);
    expect(pool.inUse).to.equal(1);
    expect(pool.allocate(300)).to.not.include('10.0.0.9');
  });

  it('property: no address is handed out twice, none is reserved, none outside the subnet', () => {
    const cidr = parseCidr('10.1.0.0/26');
    const op = fc.oneof(
      fc.record({ kind: fc.constant('alloc' as const), n: fc.integer({ min: 0, max: 40 }) }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('mark' as const), offset: fc.integer({ min: -5, max: 70 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const pool = new SubnetPool(cidr);
        const held = new Set<string>();
        for (const o of ops) {
          if (o.kind === 'alloc') {
            const got = pool.allocate(o.n);
            expect(got.length).to.be.at.most(o.n);
            for (const ip of got) {
              expect(held.has(ip), `twice: ${ip}`).to.equal(false);
              expect(isUsable(cidr, ipToInt(ip))).to.equal(true);
              held.add(ip);
            }
          } else if (o.kind === 'release' && held.size > 0) {
            const ip = [...held][o.pick % held.size]!;
            pool.release(ip);
            held.delete(ip);
          } else if (o.kind === 'mark') {
            const v = cidr.network + o.offset;
            const ip = `10.1.${(v >>> 8) & 255}.${v & 255}`;
            if (pool.markUsed(ip)) held.add(ip);
          }
          expect(pool.inUse).to.equal(held.size);
          expect(pool.free).to.equal(pool.capacity - held.size);
        }
      }),
    );
  });
});
