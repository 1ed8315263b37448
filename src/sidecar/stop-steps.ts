// A component's shutdown as a list of named steps, run last-in-first-out: each
// start step pushes how to undo itself, so what started last stops first and
// a start that fails half way undoes exactly what it did. Every step is logged
// by name and bounded in time: one that overruns its bound is logged and
// left behind (the next one runs), one that fails is logged; running the
// list never throws, so a SIGTERM always ends in a clean exit.
import { errorText } from '../log/error-text.ts';
import type { Logger } from '../log/logger.ts';

export type StopAction = () => Promise<unknown> | void;

export class StopSteps {
  private readonly steps: { name: string; action: StopAction }[] = [];
  private began = false;

  /** Whether run() has begun: the component is stopping (or undoing a failed start). */
  get running(): boolean {
    return this.began;
  }

  /** Adds a step; it runs before every step pushed earlier. */
  push(name: string, action: StopAction): void {
    this.steps.push({ name, action });
  }

  /** The names of the steps still to run, in the order they will run. */
  names(): string[] {
    return this.steps.map((s) => s.name).reverse();
  }

  /** Runs (and forgets) every step, the last pushed first, each within `boundMs`. */
  async run(log: Logger, boundMs: number): Promise<void> {
    this.began = true;
    for (let step = this.steps.pop(); step !== undefined; step = this.steps.pop()) {
      log.info('shutdown step', { step: step.name });
      await bounded(step.name, step.action, log, boundMs);
    }
  }
}

async function bounded(name: string, action: StopAction, log: Logger, boundMs: number) {
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      log.warn('shutdown step timed out', { step: name, boundMs });
      resolve();
    }, boundMs);
  });
  const done = Promise.resolve()
    .then(action)
    .then(
      () => {},
      (err: unknown) => log.warn(`${name} failed`, { error: errorText(err) }),
    );
  await Promise.race([done, overrun]);
  clearTimeout(timer);
}
