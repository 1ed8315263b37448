// The quarantine's pod look (src/fulfiller/quarantine-pods.ts): every
// interval while the node is wanted; none left: gone() once; a failed look
// is tried again with backoff and said in the log.
import { expect } from 'chai';
import { QuarantinePods } from '../../src/fulfiller/quarantine-pods.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { FakeClock } from './fake-clock.ts';

function setup(answers: Array<boolean | Error>, wanted = () => true) {
  const clock = new FakeClock();
  const looks: number[] = [];
  const gone: string[] = [];
  const pods = new QuarantinePods({
    presence: {
      anyPodOn: async () => {
        looks.push(clock.now());
        const a = answers.shift() ?? true;
        if (a instanceof Error) throw a;
        return a;
      },
    },
    clock,
    intervalMs: 1000,
    backoff: { initialMs: 100, maxMs: 400, factor: 2, jitter: 0 },
    log: silentLogger(),
    wanted,
    gone: (n) => gone.push(n),
  });
  return { clock, looks, gone, pods };
}

describe('fulfiller: the quarantine ends once no pod is bound to the node', () => {
  it('looks every interval while a pod is bound, and calls gone() once when none is left', async () => {
    const { clock, looks, gone, pods } = setup([true, true, false]);
    pods.follow('n1');
    pods.follow('n1'); // idempotent: one look per interval
    await clock.advance(999);
    expect(looks).to.deep.equal([]);
    for (let i = 0; i < 5; i++) await clock.advance(1000);
    expect(looks).to.deep.equal([1000, 2000, 3000]);
    expect(gone).to.deep.equal(['n1']);
  });

  it('a failed look is tried again with backoff, then at the interval again', async () => {
    const fail = new Error('HTTP 503');
    const { clock, looks, gone, pods } = setup([fail, fail, true, false]);
    pods.follow('n1');
    for (let i = 0; i < 40; i++) await clock.advance(100);
    expect(looks).to.deep.equal([1000, 1100, 1300, 2300]);
    expect(gone).to.deep.equal(['n1']);
  });

  it('stops looking once the node is no longer wanted (re-registered, freed) or at clear()', async () => {
    let want = true;
    const { clock, looks, gone, pods } = setup([true, true, false], () => want);
    pods.follow('n1');
    await clock.advance(1000);
    want = false;
    await clock.advance(5000);
    expect(looks).to.deep.equal([1000]);
    want = true;
    pods.follow('n1');
    pods.clear();
    await clock.advance(5000);
    expect(looks).to.deep.equal([1000]);
    expect(gone).to.deep.equal([]);
  });
});
