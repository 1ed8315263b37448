// What the fulfiller says about its subnets and nodes: the ClusterSubnetState
// publisher with its Events (one per term), the free counts behind the
// exhaustion forecast (on every replica: a standby forecasts too), and the
// gauges of /metrics.
import type { EventRecorder } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import { GROUP } from '../nnc/types.ts';
import type { IpBackend, SubnetInfo } from './backend.ts';
import type { FulfillerConfig } from './config.ts';
import { exhaustionLevels } from './exhaustion.ts';
import { ExhaustionForecaster } from './forecast.ts';
import type { AddressLedger } from './ledger.ts';
import type { FulfillerGauges } from './metrics.ts';
import type { SubnetStateApi } from './ports.ts';
import { isTerminating } from './quarantine.ts';
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

/** The gauges of /metrics, from the ledger, the reported verdicts and the running term. */
export function fulfillerGauges(input: {
  ledger: AddressLedger;
  /** An invalid spec or status is reported for the node (node-record.ts). */
  invalid(name: string): boolean;
  sampler: SubnetSampler;
  queueDepth: number;
  published(subnet: string): boolean | undefined;
}): FulfillerGauges {
  const { ledger } = input;
  const nodesByState: Record<string, number> = {};
  const count = (state: string): void => {
    nodesByState[state] = (nodesByState[state] ?? 0) + 1;
  };
  for (const name of ledger.names()) {
    const nnc = ledger.nnc(name);
    if (isTerminating(nnc)) count('Terminating');
    else if (input.invalid(name)) count('Invalid');
    else count(nnc?.status?.status ?? 'New');
  }
  for (const name of ledger.retainedNames()) if (!ledger.nnc(name)) count('Retained');
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
    addressConflicts: ledger.conflicts().length,
  };
}
