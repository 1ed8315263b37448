import { expect } from 'chai';
import { NodeQueue, WaitForChangeError, waitsForChange } from '../../src/fulfiller/queue.ts';
import { FakeClock, flush } from './fake-clock.ts';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('fulfiller/queue', () => {
  it('runs at most `workers` nodes at once, highest priority first', async () => {
    const clock = new FakeClock();
    const started: string[] = [];
    const pending = new Map<string, ReturnType<typeof deferred>>();
    const prio: Record<string, number> = { a: 1, b: 5, c: 3, d: 4 };
    const q = new NodeQueue({
      workers: 2,
      minIntervalMs: 0,
      clock,
      priority: (n) => prio[n]!,
      handler: (n) => {
        started.push(n);
        const d = deferred();
        pending.set(n, d);
        return d.promise;
      },
    });
    // Queue all while one worker is busy, so choice is by priority.
    q.enqueue('a');
    expect(started).to.deep.equal(['a']);
    q.enqueue('b');
    q.enqueue('c');
    q.enqueue('d');
    expect(started).to.deep.equal(['a', 'b']);
    expect(q.active).to.equal(2);
    pending.get('a')!.resolve();
    await flush();
    expect(started).to.deep.equal(['a', 'b', 'd']);
    pending.get('b')!.resolve();
    await flush();
    expect(started).to.deep.equal(['a', 'b', 'd', 'c']);
    pending.get('d')!.resolve();
    pending.get('c')!.resolve();
    await q.whenIdle();
  });

  it('never runs a node twice at once and honours the minimum interval', async () => {
    const clock = new FakeClock();
    const runs: number[] = [];
    let d = deferred();
    const q = new NodeQueue({
      workers: 4,
      minIntervalMs: 1000,
      clock,
      priority: () => 0,
      handler: () => {
        runs.push(clock.now());
        return d.promise;
      },
    });
    q.enqueue('n');
    q.enqueue('n');
    q.enqueue('n');
    expect(runs).to.deep.equal([0]);
    d.resolve();
    d = deferred();
    await flush();
    // Dirty again, but must wait until t=1000.
    expect(runs).to.deep.equal([0]);
    await clock.advance(999);
    expect(runs).to.deep.equal([0]);
    await clock.advance(1);
    expect(runs).to.deep.equal([0, 1000]);
    d.resolve();
    await q.whenIdle();
  });

  it('backs off exponentially after failures and honours Retry-After', async () => {
    const clock = new FakeClock();
    const runs: number[] = [];
    let fail = 3;
    const errors: number[] = [];
    const q = new NodeQueue({
      workers: 1,
      minIntervalMs: 0,
      clock,
      random: () => 0.5, // no jitter
      backoff: { initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 },
      priority: () => 0,
      handler: async () => {
        runs.push(clock.now());
        if (fail-- > 0) {
          const err = Object.assign(new Error('busy'), {
            code: 429,
            headers: {} as Record<string, string>,
          });
          if (fail === 0) err.headers['retry-after'] = '5';
          throw err;
        }
      },
      onError: (_n, _e, ms) => errors.push(ms),
    });
    q.enqueue('n');
    await clock.advance(60_000);
    expect(errors).to.deep.equal([100, 200, 5000]);
    expect(runs).to.deep.equal([0, 100, 300, 5300]);
    await q.whenIdle();
  });

  it('a failure that waits for a change is not retried by backoff; the next enqueue runs it', async () => {
    const clock = new FakeClock();
    const runs: number[] = [];
    const errors: number[] = [];
    const q = new NodeQueue({
      workers: 1,
      minIntervalMs: 0,
      clock,
      random: () => 0.5,
      backoff: { initialMs: 100, maxMs: 10_000, factor: 2, jitter: 0.2 },
      priority: () => 0,
      handler: async () => {
        runs.push(clock.now());
        throw new WaitForChangeError('unfit');
      },
      onError: (_n, _e, ms) => errors.push(ms),
    });
    q.enqueue('n');
    await clock.advance(60_000);
    expect(runs).to.deep.equal([0]);
    expect(errors).to.deep.equal([Infinity]);
    expect(q.pending).to.equal(0);
    await q.whenIdle(); // idle: nothing scheduled
    // A change queues it again, at once (no backoff delay carried over).
    q.enqueue('n');
    await clock.advance(1);
    expect(runs).to.deep.equal([0, 60_000]);
    // Any error carrying `waitsForChange` counts, e.g. a backend's typed error.
    expect(waitsForChange(Object.assign(new Error('x'), { waitsForChange: true }))).to.equal(true);
    expect(waitsForChange(new Error('x'))).to.equal(false);
  });

  it('remove() forgets a queued node; stop() waits for runs in progress', async () => {
    const clock = new FakeClock();
    const d = deferred();
    const started: string[] = [];
    const q = new NodeQueue({
      workers: 1,
      minIntervalMs: 0,
      clock,
      priority: () => 0,
      handler: (n) => {
        started.push(n);
        return d.promise;
      },
    });
    q.enqueue('a');
    q.enqueue('b');
    q.remove('b');
    let stopped = false;
    const stopping = q.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).to.equal(false);
    d.resolve();
    await stopping;
    expect(started).to.deep.equal(['a']);
  });
});
