import { expect } from 'chai';
import { interval, timer } from 'rxjs';
import { SteppedScheduler } from '../../src/sim/stepped-scheduler.ts';

describe('sim/SteppedScheduler', () => {
  it('runs actions in virtual time order and lets promises settle between them', async () => {
    const scheduler = new SteppedScheduler();
    const seen: string[] = [];
    scheduler.schedule(() => {
      seen.push(`a@${scheduler.now()}`);
      void Promise.resolve().then(() => {
        seen.push(`a-promise@${scheduler.now()}`);
        // Scheduling from a promise callback lands at the right virtual time.
        scheduler.schedule(() => seen.push(`c@${scheduler.now()}`), 50);
      });
    }, 100);
    scheduler.schedule(() => seen.push(`b@${scheduler.now()}`), 120);
    await scheduler.advanceTo(1000);
    expect(seen).to.deep.equal(['a@100', 'a-promise@100', 'b@120', 'c@150']);
    expect(scheduler.now()).to.equal(1000);
  });

  it('leaves later actions for a later advance and drives rxjs timers', async () => {
    const scheduler = new SteppedScheduler();
    const fired: number[] = [];
    timer(0, 60_000, scheduler).subscribe((n) => fired.push(n));
    await scheduler.advanceTo(150_000);
    expect(fired).to.deep.equal([0, 1, 2]);
    expect(scheduler.nextDue()).to.equal(180_000);
    await scheduler.advanceTo(180_000);
    expect(fired).to.deep.equal([0, 1, 2, 3]);
  });

  it('queues thousands of actions in time order, equal times in the order scheduled (as rxjs sorts them)', async () => {
    const scheduler = new SteppedScheduler();
    const seen: string[] = [];
    const expected: string[] = [];
    // 5,000 actions at 50 distinct times, scheduled out of order.
    for (let i = 0; i < 5_000; i += 1) {
      const at = ((i * 37) % 50) * 1_000;
      scheduler.schedule(() => seen.push(`${at}:${i}`), at);
      expected.push(`${at}:${i}`);
    }
    const key = (x: string): [number, number] => x.split(':').map(Number) as [number, number];
    expected.sort((a, b) => key(a)[0] - key(b)[0] || key(a)[1] - key(b)[1]);
    await scheduler.advanceTo(60_000);
    expect(seen).to.deep.equal(expected);
  });

  it('a periodic timer of a week of minutes can be stopped (no chain of 10,000 actions)', async () => {
    const scheduler = new SteppedScheduler();
    let ticks = 0;
    const sub = interval(60_000, scheduler).subscribe(() => (ticks += 1));
    await scheduler.advanceTo(7 * 24 * 3600_000);
    expect(ticks).to.equal(7 * 24 * 60);
    expect(() => sub.unsubscribe()).not.to.throw();
    await scheduler.advanceTo(8 * 24 * 3600_000);
    expect(ticks).to.equal(7 * 24 * 60);
  });
});
