// client-go's correlator rules (src/kube/event-correlator.ts): similar
// Events combined after 10 distinct messages in 10 minutes, and a token
// bucket of 25 Events per object refilled one per 5 minutes.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  CLIENT_GO_CORRELATOR,
  COMBINED_PREFIX,
  createEventCorrelator,
} from '../../src/kube/event-correlator.ts';

const pod = { apiVersion: 'v1', kind: 'Pod', name: 'p', namespace: 'ns', uid: 'u1' };
const warn = (message: string) => ({ type: 'Warning' as const, reason: 'Bad', message });

describe('kube/event-correlator', () => {
  it('lets an object burst 25 Events, then one per 5 minutes; other objects have their own bucket', () => {
    const c = createEventCorrelator({ aggregateMaxEvents: 1_000 });
    const passed = (at: number, obj = pod) =>
      Array.from({ length: 40 }, (_, i) => c.correlate(obj, warn(`m${at}-${i}`), at)).filter(
        (r) => !r.skip,
      ).length;
    expect(passed(0)).to.equal(25);
    expect(passed(299_999)).to.equal(0);
    expect(passed(300_000)).to.equal(1);
    expect(passed(300_000, { ...pod, name: 'q' })).to.equal(25);
    // A repeat's count bump takes a token too, as client-go filters the observed Event.
    expect(c.correlate(pod, warn('m0-0'), 300_001).skip).to.equal(true);
    // Refilled to the burst, never beyond.
    expect(passed(300_000 + 100 * 300_000)).to.equal(25);
  });

  it('combines the 10th and later distinct messages of one reason within 10 minutes into one Event', () => {
    const c = createEventCorrelator();
    const keys = new Set<string>();
    const messages: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = c.correlate(pod, warn(`value ${i} refused`), i * 1000);
      if (r.skip) throw new Error('not spam yet');
      keys.add(r.key);
      messages.push(r.details.message);
    }
    expect(messages.slice(0, 9)).to.deep.equal(
      Array.from({ length: 9 }, (_, i) => `value ${i} refused`),
    );
    expect(messages.slice(9)).to.deep.equal(
      [9, 10, 11].map((i) => `${COMBINED_PREFIX}value ${i} refused`),
    );
    expect(keys.size).to.equal(10); // nine of their own, and the combined one
    // Another reason on the same object is its own group.
    const other = c.correlate(pod, { ...warn('x'), reason: 'Other' }, 12_000);
    expect(other.skip === false && other.details.message).to.equal('x');
    // Quiet for more than 10 minutes: counted afresh.
    const later = c.correlate(pod, warn('value 12 refused'), 11_000 + 600_001);
    expect(later.skip === false && later.details.message).to.equal('value 12 refused');
  });

  it('repeats of one message are not distinct: they never combine', () => {
    const c = createEventCorrelator();
    const r = Array.from({ length: 20 }, (_, i) => c.correlate(pod, warn('same'), i));
    expect(r.every((x) => !x.skip && x.details.message === 'same')).to.equal(true);
  });

  it('never lets more through per object than the burst and the refill allow (property)', () => {
    const event = fc.record({
      dt: fc.integer({ min: 0, max: 200_000 }),
      object: fc.constantFrom('a', 'b', 'c'),
      message: fc.constantFrom('1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11'),
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 300 }), (events) => {
        const c = createEventCorrelator();
        const passed = new Map<string, number>();
        const firstAt = new Map<string, number>();
        let t = 0;
        for (const e of events) {
          t += e.dt;
          if (!firstAt.has(e.object)) firstAt.set(e.object, t);
          const r = c.correlate({ ...pod, name: e.object }, warn(e.message), t);
          if (!r.skip) passed.set(e.object, (passed.get(e.object) ?? 0) + 1);
          const allowed =
            CLIENT_GO_CORRELATOR.spamBurst +
            Math.floor((t - firstAt.get(e.object)!) / CLIENT_GO_CORRELATOR.spamRefillMs);
          expect(passed.get(e.object) ?? 0).to.be.at.most(allowed);
        }
      }),
    );
  });
});
