// The one clock (src/clock/): the system clock's sleep ends early when told
// to, and the rxjs adapter's time and timers are its scheduler's, so code
// tested on virtual time runs on the same Clock as the product.
import { expect } from 'chai';
import { TestScheduler } from 'rxjs/testing';
import { sleepOrAbort, systemClock, unrefSystemClock } from '../../src/clock/clock.ts';
import { schedulerClock } from '../../src/clock/scheduler-clock.ts';

describe('the one clock', () => {
  it('the system clock sleeps its time, and ends a sleep at once when its signal aborts', async () => {
    const start = performance.now();
    await systemClock.sleep(20);
    expect(performance.now() - start).to.be.at.least(15);

    const stop = new AbortController();
    const began = performance.now();
    const sleeping = systemClock.sleep(60_000, stop.signal);
    setTimeout(() => stop.abort(new Error('stopping')), 10);
    await sleeping; // resolves, without error
    expect(performance.now() - began).to.be.below(5_000);
    await systemClock.sleep(60_000, stop.signal); // already aborted: at once
    expect(performance.now() - began).to.be.below(5_000);
  });

  it('sleepOrAbort rejects with the signal’s reason, as a request’s wait must', async () => {
    const stop = new AbortController();
    const reason = new Error('request aborted');
    setTimeout(() => stop.abort(reason), 10);
    const outcome = await sleepOrAbort(unrefSystemClock, 60_000, stop.signal).then(
      () => 'slept',
      (err: unknown) => err,
    );
    expect(outcome).to.equal(reason);
    await sleepOrAbort(systemClock, 1); // no signal: just a sleep
  });

  it('a cleared system timer never runs; clearing undefined or a spent timer does nothing', async () => {
    let ran = 0;
    const timer = systemClock.setTimeout(() => (ran += 1), 5);
    systemClock.clearTimeout(timer);
    systemClock.clearTimeout(undefined);
    const spent = systemClock.setTimeout(() => (ran += 10), 0);
    await systemClock.sleep(20);
    systemClock.clearTimeout(spent);
    expect(ran).to.equal(10);
  });

  it('on an rxjs scheduler, time and timers advance with TestScheduler’s virtual time', () => {
    const scheduler = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    const clock = schedulerClock(scheduler);
    const ran: [string, number][] = [];
    clock.setTimeout(() => ran.push(['b', clock.now()]), 30);
    clock.setTimeout(() => ran.push(['a', clock.now()]), 10);
    const cleared = clock.setTimeout(() => ran.push(['cleared', clock.now()]), 20);
    clock.setTimeout(() => ran.push(['negative', clock.now()]), -5);
    clock.clearTimeout(cleared);
    clock.clearTimeout(undefined);
    expect(clock.now()).to.equal(0);
    scheduler.flush();
    expect(ran).to.deep.equal([
      ['negative', 0],
      ['a', 10],
      ['b', 30],
    ]);
    expect(clock.now()).to.equal(30);
  });

  it('a sleep on virtual time resolves when the scheduler reaches it, or at once on abort', async () => {
    const scheduler = new TestScheduler((a, b) => {
      expect(a).to.deep.equal(b);
    });
    const clock = schedulerClock(scheduler);
    const woke: number[] = [];
    const sleeping = clock.sleep(500).then(() => woke.push(clock.now()));
    const stop = new AbortController();
    const aborted = clock.sleep(10_000, stop.signal).then(() => woke.push(-1));
    stop.abort();
    await aborted;
    expect(woke).to.deep.equal([-1]);
    scheduler.flush(); // runs up to maxFrames (750): the 500 ms sleep, not the aborted one
    await sleeping;
    expect(woke).to.deep.equal([-1, 500]);
  });
});
