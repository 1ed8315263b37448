// The fulfiller's Prometheus metrics: one collector per process with its own
// registry (never prom-client's global one). Counters are bumped by the
// control loop; gauges that describe the current state (nodes by state, queue
// depth, subnets, leader) are read from a source on every scrape, so they are
// never older than the scrape.
//
// Backends add their own series to the same registry: the backend factory
// gets `registry` in its BackendContext (e.g. the Azure backend's ARM calls by
// operation and status code, call duration, throttled waits), and they appear
// on the same /metrics. Prefix them `pool_monitor_fulfiller_`.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const METRIC_PREFIX = 'pool_monitor_fulfiller_';

/** What a scrape reads of the fulfiller's state. */
export interface FulfillerGauges {
  /** Node count per state (Updated, Updating, SubnetFull, Invalid, New, Retained, Terminating). */
  nodesByState: Record<string, number>;
  queueDepth: number;
  subnets: Array<{
    name: string;
    capacity: number;
    free: number;
    exhausted?: boolean;
    /** Seconds to exhaustion at the recent net allocation rate (+Inf: not filling; absent: too little history). */
    exhaustionForecastSeconds?: number | undefined;
  }>;
  /** Addresses that more than one NNC status holds (should always be 0). */
  addressConflicts: number;
  /** Addresses withheld from a status now, because another record holds them (status-gate.ts). */
  withheld: number;
}

export const NODE_STATES = [
  'Updated',
  'Updating',
  'SubnetFull',
  'Invalid',
  'New',
  'Retained',
  'Terminating',
];
export const WRITE_RESULTS = ['success', 'conflict', 'failure'] as const;
export const LIFECYCLE_ACTIONS = ['created', 'recreated', 'deleted'] as const;
/** Reconcile duration buckets, seconds: a no-op is microseconds, a cloud round seconds. */
export const RECONCILE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface FulfillerMetricsOptions {
  /** Node's default process metrics in this registry (default true). */
  defaultMetrics?: boolean;
}

export class FulfillerMetrics {
  readonly registry: Registry;
  readonly #writes: Counter<'result'>;
  readonly #allocated: Counter;
  readonly #withheld: Counter;
  readonly #released: Counter;
  readonly #lifecycle: Counter<'action'>;
  readonly #reconcile: Histogram<'outcome'>;
  readonly #leader: Gauge;
  readonly #transitions: Counter;
  readonly #nodes: Gauge<'state'>;
  readonly #queue: Gauge;
  readonly #free: Gauge<'subnet'>;
  readonly #capacity: Gauge<'subnet'>;
  readonly #exhausted: Gauge<'subnet'>;
  readonly #forecast: Gauge<'subnet'>;
  readonly #conflicts: Gauge;
  readonly #withheldNow: Gauge;
  readonly #refused: Counter<'reason'>;
  #source: (() => FulfillerGauges) | undefined;

  constructor(options: FulfillerMetricsOptions = {}) {
    const registry = (this.registry = new Registry());
    const registers = [registry];
    const p = METRIC_PREFIX;
    this.#writes = new Counter({
      name: `${p}status_writes_total`,
      help: 'NNC status writes, by result (success, conflict: 409, failure).',
      labelNames: ['result'],
      registers,
    });
    for (const result of WRITE_RESULTS) this.#writes.inc({ result }, 0);
    this.#allocated = new Counter({
      name: `${p}ips_allocated_total`,
      help: 'Secondary IPs added to NNC statuses.',
      registers,
    });
    this.#withheld = new Counter({
      name: `${p}ips_withheld_total`,
      help: "Addresses the backend gave a node that another NNC's status (or a claim, or a deleted node's kept addresses) still held, kept out of its status until freed.",
      registers,
    });
    this.#released = new Counter({
      name: `${p}ips_released_total`,
      help: 'Secondary IPs removed from NNC statuses (ipsNotInUse).',
      registers,
    });
    this.#lifecycle = new Counter({
      name: `${p}nnc_lifecycle_total`,
      help: 'NNCs created for new Nodes, recreated under live Nodes, deleted with their Nodes.',
      labelNames: ['action'],
      registers,
    });
    for (const action of LIFECYCLE_ACTIONS) this.#lifecycle.inc({ action }, 0);
    this.#reconcile = new Histogram({
      name: `${p}reconcile_duration_seconds`,
      help: 'Time of one node action (status, create, delete), by outcome.',
      labelNames: ['outcome'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.#leader = new Gauge({
      name: `${p}leader`,
      help: 'This replica holds the lease and may write (1) or stands by (0).',
      registers,
    });
    this.#transitions = new Counter({
      name: `${p}leader_transitions_total`,
      help: 'Times this replica started or stopped leading.',
      registers,
    });
    this.#nodes = new Gauge({
      name: `${p}nodes`,
      help: 'Nodes by the state of their NNC.',
      labelNames: ['state'],
      registers,
    });
    this.#queue = new Gauge({
      name: `${p}queue_depth`,
      help: 'Nodes waiting for an action.',
      registers,
    });
    this.#free = new Gauge({
      name: `${p}subnet_free_ips`,
      help: 'Addresses free in the subnet.',
      labelNames: ['subnet'],
      registers,
    });
    this.#capacity = new Gauge({
      name: `${p}subnet_capacity_ips`,
      help: 'Addresses the subnet can hand out.',
      labelNames: ['subnet'],
      registers,
    });
    this.#exhausted = new Gauge({
      name: `${p}subnet_exhausted`,
      help: 'Subnet published as exhausted (1) or not (0).',
      labelNames: ['subnet'],
      registers,
    });
    this.#forecast = new Gauge({
      name: `${p}subnet_exhaustion_forecast_seconds`,
      help: 'Seconds until the subnet has no free address at the net allocation rate of the last 10 min (allocations minus releases); +Inf when that rate is not positive; absent with less than 1 min of history.',
      labelNames: ['subnet'],
      registers,
    });
    this.#conflicts = new Gauge({
      name: `${p}address_conflicts`,
      help: 'Addresses held by more than one NNC status (always 0 unless edited by hand).',
      registers,
    });
    this.#withheldNow = new Gauge({
      name: `${p}ips_withheld`,
      help: 'Addresses a node holds in its backend that are kept out of its status now, because another record holds them (an NNC, a write in doubt, a quarantine).',
      registers,
    });
    this.#refused = new Counter({
      name: `${p}status_refused_total`,
      help: 'Status writes the status gate refused (reason "drop": it would drop an address the node has not released).',
      labelNames: ['reason'],
      registers,
    });
    this.#leader.set(0);
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  }

  statusWrite(result: (typeof WRITE_RESULTS)[number]): void {
    this.#writes.inc({ result });
  }

  allocated(n: number): void {
    if (n > 0) this.#allocated.inc(n);
  }

  released(n: number): void {
    if (n > 0) this.#released.inc(n);
  }

  withheld(n: number): void {
    if (n > 0) this.#withheld.inc(n);
  }

  statusRefused(reason: 'drop'): void {
    this.#refused.inc({ reason });
  }

  lifecycle(action: (typeof LIFECYCLE_ACTIONS)[number]): void {
    this.#lifecycle.inc({ action });
  }

  reconcile(outcome: string, seconds: number): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.#reconcile.observe({ outcome }, seconds);
  }

  setLeader(leading: boolean): void {
    this.#leader.set(leading ? 1 : 0);
    this.#transitions.inc();
  }

  /** Where the state gauges come from; read on every scrape. */
  setSource(source: () => FulfillerGauges): void {
    this.#source = source;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async render(): Promise<string> {
    const g = this.#source?.();
    if (g) {
      this.#nodes.reset();
      for (const state of NODE_STATES) this.#nodes.set({ state }, g.nodesByState[state] ?? 0);
      this.#queue.set(g.queueDepth);
      this.#forecast.reset();
      for (const s of g.subnets) {
        if (s.exhaustionForecastSeconds !== undefined)
          this.#forecast.set({ subnet: s.name }, s.exhaustionForecastSeconds);
        this.#free.set({ subnet: s.name }, s.free);
        this.#capacity.set({ subnet: s.name }, s.capacity);
        if (s.exhausted !== undefined) this.#exhausted.set({ subnet: s.name }, s.exhausted ? 1 : 0);
      }
      this.#conflicts.set(g.addressConflicts);
      this.#withheldNow.set(g.withheld);
    }
    return this.registry.metrics();
  }
}
