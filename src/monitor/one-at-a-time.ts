// Run control as one operator: at most one run at a time, and the latest
// value wins. A value that arrives while a run is in flight replaces any
// value waiting before it; when the run completes, the waiting value runs if
// it is due. A value that is not due when it arrives (or when its turn
// comes) is dropped, and drops whatever was waiting: the newest state
// decides. When the source completes, nothing new starts; the output
// completes once the run in flight has.
//
// Unlike exhaustMap (which drops what arrives during a run) and concatMap
// (which runs every value), it runs exactly what the latest state calls for.
import { Observable, type OperatorFunction, type Subscription } from 'rxjs';

export function oneAtATime<T, R>(
  isDue: (value: T) => boolean,
  run: (value: T) => Observable<R>,
): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((subscriber) => {
      let latest: T | undefined;
      let waiting = false;
      let running = false;
      let sourceDone = false;
      let draining = false;
      let inner: Subscription | undefined;

      // A loop, not recursion: runs that complete synchronously chain here.
      const drain = (): void => {
        if (draining) return;
        draining = true;
        while (!running && waiting && !sourceDone && !subscriber.closed) {
          waiting = false;
          const value = latest as T;
          if (!isDue(value)) continue;
          running = true;
          inner = run(value).subscribe({
            next: (r) => subscriber.next(r),
            error: (err: unknown) => subscriber.error(err),
            complete: () => {
              running = false;
              inner = undefined;
              if (sourceDone) subscriber.complete();
              else drain();
            },
          });
        }
        draining = false;
      };

      const upstream = source.subscribe({
        next: (value) => {
          latest = value;
          waiting = true;
          drain();
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          sourceDone = true;
          if (!running) subscriber.complete();
        },
      });
      return () => {
        upstream.unsubscribe();
        inner?.unsubscribe();
      };
    });
}
