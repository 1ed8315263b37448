// The monitor's run-control operator on its own, in marble diagrams: one run
// at a time, the latest value wins, values that are not due drop out.
import { expect } from 'chai';
import { map, of, take, timer, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { oneAtATime } from '../../src/monitor/one-at-a-time.ts';

function scheduler(): TestScheduler {
  return new TestScheduler((a, b) => {
    expect(a).to.deep.equal(b);
  });
}

/** A run that takes 5 frames and then emits the value it ran with, upper-cased. */
function slow(ts: TestScheduler): (v: string) => Observable<string> {
  return (v) => timer(5, ts).pipe(map(() => v.toUpperCase()));
}

const due = (v: string): boolean => v !== 'x' && v !== 'y';

describe('monitor: oneAtATime', () => {
  it('runs one value at a time; values meanwhile coalesce into the latest', () => {
    const ts = scheduler();
    ts.run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('a-b-c-------d----|');
      const runs: string[] = [];
      const out = source.pipe(
        oneAtATime(due, (v) => {
          runs.push(v);
          return slow(ts)(v);
        }),
      );
      // a runs 0-5; b and c arrive meanwhile, c wins and runs 5-10; d runs 12-17.
      expectObservable(out).toBe('-----A----C------(D|)');
      expectSubscriptions(source.subscriptions).toBe('^----------------!');
      ts.flush();
      expect(runs).to.deep.equal(['a', 'c', 'd']);
    });
  });

  it('a value that is not due is skipped, and drops the value waiting before it', () => {
    const ts = scheduler();
    ts.run(({ hot, expectObservable }) => {
      // b waits during a's run, then x (not due) replaces it: nothing more runs.
      const source = hot('a-b-x-----y--c----|');
      expectObservable(source.pipe(oneAtATime(due, slow(ts)))).toBe('5ms A 12ms (C|)');
    });
  });

  it('on completion starts nothing new and completes after the run in flight', () => {
    const ts = scheduler();
    ts.run(({ hot, expectObservable }) => {
      const source = hot('a-b|');
      expectObservable(source.pipe(oneAtATime(due, slow(ts)))).toBe('-----(A|)');
    });
  });

  it('chains runs that complete synchronously without growing the stack', () => {
    const values = Array.from({ length: 50_000 }, (_, i) => String(i));
    const seen: string[] = [];
    of(...values)
      .pipe(
        oneAtATime(
          () => true,
          (v) => of(v),
        ),
      )
      .subscribe((v) => seen.push(v));
    expect(seen).to.have.length(values.length);
  });

  it('a run that emits its value and completes at once lets the next value run at once', () => {
    const ts = scheduler();
    ts.run(({ hot, expectObservable }) => {
      const source = hot('ab-c|');
      expectObservable(source.pipe(oneAtATime(due, (v) => of(v).pipe(take(1))))).toBe('ab-c|');
    });
  });

  it('unsubscribing cancels the run in flight', () => {
    const ts = scheduler();
    ts.run(({ hot, expectObservable }) => {
      const source = hot('a-b-c');
      expectObservable(source.pipe(oneAtATime(due, slow(ts))), '^--!').toBe('');
    });
  });

  it('errors of the run or the source pass through', () => {
    const ts = scheduler();
    ts.run(({ hot, cold, expectObservable }) => {
      expectObservable(hot('a--#').pipe(oneAtATime(due, () => cold('-----b')))).toBe('---#');
      expectObservable(hot('a---').pipe(oneAtATime(due, () => cold('--#')))).toBe('--#');
    });
  });
});
