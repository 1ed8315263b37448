// What the fulfiller says about its subnets and nodes: the ClusterSubnetState
// publisher with its Events (one per term), the free counts behind the
// exhaustion forecast (on every replica: a standby forecasts too), what is
// done when addresses are taken or come free, and the gauges of /metrics.
import type { EventRecorder } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import { GROUP } from '../nnc/types.ts';
import type { IpBackend, SubnetInfo } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import { exhaustionLevels } from './exhaustion.ts';
import { ExhaustionForecaster } from './forecast.ts';
import type { NodeBook } from './node-book.ts';
import type { FulfillerGauges } from './metrics.ts';
import type { SubnetStateApi } from './ports.ts';
import { isTerminating } from './quarantine.ts';
import { STATUS_SUBNET_FULL } from './status.ts';
import type { ClockTimers } from '../clock/clock.ts';
import { ExhaustionPublisher } from './subnet-state.ts';

/** A term's ClusterSubnetState publisher; a change of state is also an Event on the CSS. */
export function exhaustionPublisher(deps: {
  config: FulfillerConfig;
  api: SubnetStateApi;
  events: EventRecorder;
  clock: ClockTimers;
  log: Logger;
  random?: () => number;
}): ExhaustionPublisher {
  const { config, events } = deps;
  return new ExhaustionPublisher({
    api: deps.api,
    levels: exhaustionLevels(config.exhaustionThreshold, config.recoveryMargin),
    holdMs: config.exhaustionHoldMs,
    backoff: config.backoff,
    clock: deps.clock,
    logger: deps.log,
    random: deps.random,
    onChange: (subnet, exhausted) => {
      void events.recordEvent(
        {
          apiVersion: `${GROUP}/v1alpha1`,
          kind: 'ClusterSubnetState',
          name: subnet.name,
          namespace: config.namespace,
        },
        exhausted
          ? {
              type: 'Warning',
              reason: 'SubnetExhausted',
              message: `subnet ${subnet.cidr} has ${subnet.free} free addresses (threshold ${config.exhaustionThreshold})`,
            }
          : {
              type: 'Normal',
              reason: 'SubnetRecovered',
              message: `subnet ${subnet.cidr} has ${subnet.free} free addresses again`,
            },
      );
    },
  });
}

/** Free counts over time, per subnet, for the exhaustion forecast. */
export class SubnetSampler {
  private readonly forecaster: ExhaustionForecaster;
  private readonly backend: IpBackend;
  private readonly clock: ClockTimers;

  constructor(config: FulfillerConfig, backend: IpBackend, clock: ClockTimers) {
    this.forecaster = new ExhaustionForecaster(config.forecast);
    this.backend = backend;
    this.clock = clock;
  }

  /** Records the free counts now and returns the subnets read. */
  sample(subnets: SubnetInfo[] = this.backend.subnets()): SubnetInfo[] {
    const now = this.clock.now();
    for (const s of subnets) this.forecaster.record(s.name, s.free, now);
    this.forecaster.keepOnly(new Set(subnets.map((s) => s.name)));
    return subnets;
  }

  forecast(subnet: string): number | undefined {
    return this.forecaster.forecast(subnet, this.clock.now());
  }
}

/** What a change of the subnets reaches: the running term's publisher and queue. */
export interface SubnetTerm {
  /** The term's CSS publisher, while this replica leads. */
  publisher(): ExhaustionPublisher | undefined;
  /** Queues the node whatever it seems to need. */
  enqueue(name: string): void;
}

/**
 * Addresses were taken, or came free: the forecast samples, the CSS is
 * published, and on frees the nodes left short by a full subnet or
 * withholding addresses get another go.
 */
export class SubnetChanges {
  private readonly d: {
    book: NodeBook;
    backend: IpBackend;
    sampler: SubnetSampler;
    term: SubnetTerm;
  };

  constructor(deps: SubnetChanges['d']) {
    this.d = deps;
    // However an address comes free (a status read without it, a deleted
    // NNC, a settled doubt), nodes left short get another go, once per tick.
    let wakeQueued = false;
    deps.book.addresses.subscribe((_ip, used) => {
      if (used || wakeQueued) return;
      wakeQueued = true;
      queueMicrotask(() => {
        wakeQueued = false;
        this.changed(true);
      });
    });
  }

  changed(freed: boolean): void {
    this.d.sampler.sample();
    this.publish();
    if (freed && this.d.term.publisher()) this.wakeShortNodes();
  }

  publish(): void {
    this.d.term.publisher()?.update(this.d.backend.subnets());
  }

  private wakeShortNodes(): void {
    const { book, term } = this.d;
    for (const name of book.names())
      if (book.nnc(name)?.status?.status === STATUS_SUBNET_FULL) term.enqueue(name);
    for (const r of book.withholding()) term.enqueue(r.name);
  }
}

/** The gauges of /metrics, from the node records and the running term. */
export function fulfillerGauges(input: {
  book: NodeBook;
  sampler: SubnetSampler;
  queueDepth: number;
  published(subnet: string): boolean | undefined;
}): FulfillerGauges {
  const { book } = input;
  const nodesByState: Record<string, number> = {};
  const count = (state: string): void => {
    nodesByState[state] = (nodesByState[state] ?? 0) + 1;
  };
  let withheld = 0;
  for (const r of book.all()) {
    withheld += r.withheld?.length ?? 0;
    const nnc = r.nnc();
    if (nnc) {
      if (isTerminating(nnc)) count('Terminating');
      else if (r.verdicts.invalid !== undefined) count('Invalid');
      else count(nnc.status?.status ?? 'New');
    } else if (r.kept) count('Retained');
  }
  return {
    nodesByState,
    queueDepth: input.queueDepth,
    subnets: input.sampler.sample().map((s) => {
      const exhausted = input.published(s.name);
      return {
        name: s.name,
        capacity: s.capacity,
        free: s.free,
        exhaustionForecastSeconds: input.sampler.forecast(s.name),
        ...(exhausted !== undefined ? { exhausted } : {}),
      };
    }),
    addressConflicts: book.conflicts(),
    withheld,
  };
}
