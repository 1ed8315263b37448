// The embedded run's watch on the invariants: every interval it samples the
// cluster straight from the local API server's store (every pod, the
// workload's and any a person made with kubectl; the NNCs; the
// ClusterSubnetStates), says each violation that became persistent on
// stderr and in the log, and moves the progress bar.
import { GROUP, CSS_PLURAL, DEFAULT_NAMESPACE, NNC_PLURAL } from '../../src/nnc/types.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { PodSnapshot } from '../../src/sim/invariants.ts';
import type { ProgressBar } from '../../src/sim/report/progress.ts';
import type { ApiServer } from '../apiserver/server.ts';
import { ClusterSampler, type SubnetStateSnapshot } from './sampler.ts';

export class InvariantWatch {
  readonly sampler = new ClusterSampler();
  /** When the workload started: the samples' time zero. */
  readonly t0 = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly deps: {
    server: Pick<ApiServer, 'objects'>;
    bar: ProgressBar;
    err: { write(text: string): unknown };
    log: Logger;
  };

  constructor(deps: InvariantWatch['deps']) {
    this.deps = deps;
  }

  /** Seconds since t0. */
  elapsed(): number {
    return (Date.now() - this.t0) / 1000;
  }

  /** One sample now; each violation that became persistent is said at once. */
  sample(): void {
    const { server, bar, err, log } = this.deps;
    const snap = {
      pods: server.objects('', 'pods') as PodSnapshot[],
      nncs: server.objects(GROUP, NNC_PLURAL, DEFAULT_NAMESPACE) as unknown as NodeNetworkConfig[],
      subnets: server.objects(GROUP, CSS_PLURAL, DEFAULT_NAMESPACE) as SubnetStateSnapshot[],
    };
    for (const v of this.sampler.sample(this.elapsed(), snap)) {
      bar.done();
      err.write(`INVARIANT VIOLATED: ${v.message}\n`);
      log.error('invariant violated', { ...v });
    }
  }

  /** Samples now and every `intervalMs`, moving the bar through `durationSeconds` of `label`. */
  start(intervalMs: number, durationSeconds: number, label: string): void {
    this.sample();
    this.timer = setInterval(() => {
      this.sample();
      const elapsed = this.elapsed();
      if (elapsed <= durationSeconds) this.deps.bar.update(elapsed, durationSeconds, label);
    }, intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
