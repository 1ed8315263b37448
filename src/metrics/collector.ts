// The sidecar's Prometheus metrics, all in one collector with its own
// registry: many sidecars can live in one process (the embedded mode) without
// fighting over prom-client's global registry.
//
// The pool gauges keep the names, help texts' meaning and labels Azure CNS
// publishes (`cx_ipam_*` with subnet / subnet_cidr / podnet_arm_id and the
// constant customer_metric label), so dashboards built for CNS keep working.
// A dual-stack pool publishes them once per address family, each family with
// its own subnet labels: IPv4's series exactly as CNS's (no label added, so
// a single-stack or dual-stack node's IPv4 series are the ones CNS and this
// product always published), IPv6's with `family="IPv6"` (CNS has no family
// label: select IPv6 with it, IPv4 with `family=""`).
// Our own series (reconciles, NNC writes, demand, target, node API traffic)
// carry the `pool_monitor_` prefix.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { StateCounts } from '../ipstore/types.ts';
import { IdleAccountMetrics, type IdleAccountFigures } from './idle-account.ts';

/** One address family of the pool (src/sidecar/families.ts), for its own series. */
export interface FamilyObservation {
  /** `IPv4` or `IPv6`; only IPv6 series carry it as the `family` label. */
  family: string;
  subnet?: string;
  subnetCIDR?: string;
  podnetARMID?: string;
  /** The family's network container primary IPs. */
  primaryIPs?: number;
  /** The family's subnet is exhausted (its own ClusterSubnetState). */
  exhausted?: boolean;
  counts: StateCounts;
}

/** What the collector needs of the monitor's state to set the pool gauges. */
export interface PoolObservation {
  demand?: number;
  /** The request last written to the NNC spec (`spec.requestedIPCount`). */
  request?: number;
  target?: number;
  /** Effective batch size (after clamping and exhaustion override). */
  batch?: number;
  /** Effective maximum IP count. */
  max?: number;
  exhausted?: boolean;
  /** Label values, as CNS uses them; empty strings when unknown. */
  subnet?: string;
  subnetCIDR?: string;
  podnetARMID?: string;
  /** Number of network container primary IPs (CNS adds them to total_ips). */
  primaryIPs?: number;
  /** The release policy's idle account against CNS v2 (`--release-delay auto`). */
  idleAccount?: IdleAccountFigures;
  /**
   * The pool per address family: when given, the CNS gauges are set per
   * family from these (the labels and counts above are not used for them).
   */
  families?: FamilyObservation[];
}

export interface MetricsCollectorOptions {
  /**
   * Collect Node's default process metrics into this registry. Default true;
   * turn it off when many sidecars share one process (only one should).
   */
  defaultMetrics?: boolean;
  /** Labels added to every series, e.g. `{ node: 'aks-1' }`. */
  defaultLabels?: Record<string, string>;
}

/**
 * The monitor's reconcile outcome kinds, pre-created at 0 so the series exist
 * from the first scrape; any other (bounded) value is still counted.
 */
export const KNOWN_RECONCILE_OUTCOMES = [
  'scaled',
  'corrected',
  'at-target',
  'deferred',
  'throttled',
  'dry-run',
  'failed',
] as const;

const CNS_LABELS = ['subnet', 'subnet_cidr', 'podnet_arm_id'] as const;
/** Ours, on IPv6 series only (see the header). */
const FAMILY_LABEL = 'family';
const CUSTOMER_LABEL = { name: 'customer_metric', value: 'customer metric' };
const LABEL_VALUE = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Pod wait buckets in seconds: at once, within a fulfil round trip, minutes on an exhausted subnet. */
export const POD_WAIT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300];

/** HTTP latency buckets in seconds: the node API answers in well under 1 ms to 1 s. */
export const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

type CnsLabel = (typeof CNS_LABELS)[number] | typeof FAMILY_LABEL;
type CnsGauge = Gauge<CnsLabel | 'customer_metric'>;

/** Keeps label values bounded: anything unexpected becomes `other`. */
export function safeLabel(value: string): string {
  return LABEL_VALUE.test(value) ? value : 'other';
}

/** The CNS pool gauges, one per figure CNS publishes. */
function poolGauges(cns: (name: string, help: string) => CnsGauge) {
  return {
    requested: cns('cx_ipam_requested_ips', 'Secondary IPs this node requested (NNC spec).'),
    available: cns('cx_ipam_available_ips', 'IPs on this node free for a pod (Available).'),
    allocated: cns('cx_ipam_pod_allocated_ips', 'IPs on this node in use by pods (Assigned).'),
    pendingRelease: cns('cx_ipam_pending_release_ips', 'IPs marked to be given back.'),
    pendingProgramming: cns(
      'cx_ipam_pending_programming_ips',
      'IPs reserved but not usable yet (PendingProgramming).',
    ),
    total: cns('cx_ipam_total_ips', 'All IPs the node holds: secondary plus NC primary IPs.'),
    secondary: cns('cx_ipam_secondary_ips', 'Secondary IPs the NNC status backs.'),
    primary: cns('cx_ipam_primary_ips', 'Network container primary IPs.'),
    max: cns('cx_ipam_max_ips', 'Most secondary IPs this node may hold.'),
    batch: cns('cx_ipam_batch_size', 'Pool scaling batch size.'),
    currentAvailable: cns(
      'cx_ipam_current_available_ips',
      'Secondary IPs minus Assigned minus PendingRelease.',
    ),
    expectAvailable: cns(
      'cx_ipam_expect_available_ips',
      'Requested IPs minus Assigned: free IPs once the request is honoured.',
    ),
    exhaustion: cns('cx_ipam_subnet_exhaustion_state', 'Subnet exhausted (1) or not (0).'),
  };
}
type PoolGauges = ReturnType<typeof poolGauges>;

/** CNS's labels of a family's series; `family` only on IPv6 ones (see the header). */
function seriesLabels(f: FamilyObservation): Partial<Record<CnsLabel, string>> {
  return {
    subnet: f.subnet ?? '',
    subnet_cidr: f.subnetCIDR ?? '',
    podnet_arm_id: f.podnetARMID ?? '',
    ...(f.family === 'IPv6' ? { [FAMILY_LABEL]: 'IPv6' } : {}),
  };
}

function finite(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}

export class MetricsCollector {
  readonly registry: Registry;
  readonly contentType: string;

  readonly #pool: PoolGauges;
  readonly #exhaustionCount: Counter<CnsLabel | 'subnet_exhaustion_state'>;
  readonly #reconciles: Counter<'outcome'>;
  readonly #writes: Counter<'result'>;
  readonly #demand: Gauge;
  readonly #target: Gauge;
  readonly #podWait: Histogram;
  readonly #refused: Counter;
  readonly #httpRequests: Counter<'method' | 'route' | 'code'>;
  readonly #httpDuration: Histogram<'method' | 'route'>;
  readonly #idleAccount: IdleAccountMetrics;
  #labelKey: string | undefined;
  #source: (() => { observation: PoolObservation; counts: StateCounts } | undefined) | undefined;

  constructor(options: MetricsCollectorOptions = {}) {
    this.registry = new Registry();
    this.contentType = this.registry.contentType;
    if (options.defaultLabels) this.registry.setDefaultLabels(options.defaultLabels);
    const registers = [this.registry];
    const cns = (name: string, help: string): CnsGauge =>
      new Gauge({
        name,
        help,
        labelNames: [...CNS_LABELS, FAMILY_LABEL, CUSTOMER_LABEL.name],
        registers,
      });
    this.#pool = poolGauges(cns);
    this.#exhaustionCount = new Counter({
      name: 'cx_ipam_subnet_exhaustion_state_count_total',
      help: 'Pool observations, by subnet exhaustion state.',
      labelNames: [...CNS_LABELS, FAMILY_LABEL, 'subnet_exhaustion_state'],
      registers,
    });
    this.#reconciles = new Counter({
      name: 'pool_monitor_reconciles_total',
      help: 'Pool reconciles, by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of KNOWN_RECONCILE_OUTCOMES) this.#reconciles.inc({ outcome }, 0);
    this.#writes = new Counter({
      name: 'pool_monitor_nnc_writes_total',
      help: 'NodeNetworkConfig spec writes, by result.',
      labelNames: ['result'],
      registers,
    });
    this.#writes.inc({ result: 'success' }, 0);
    this.#writes.inc({ result: 'failure' }, 0);
    this.#demand = new Gauge({
      name: 'pool_monitor_demand_ips',
      help: 'Pods on this node that need an IP.',
      registers,
    });
    this.#target = new Gauge({
      name: 'pool_monitor_target_ips',
      help: 'Pool size the last reconcile calculated.',
      registers,
    });
    this.#podWait = new Histogram({
      name: 'pool_monitor_pod_ip_wait_seconds',
      help: 'Seconds from a pod appearing on this node (first seen by the pod watch, or its PodScheduled/creation timestamp when the watch saw it more than 1 s late) to the CNI request that got its address; once per pod.',
      buckets: POD_WAIT_BUCKETS,
      registers,
    });
    this.#refused = new Counter({
      name: 'pool_monitor_pod_ip_requests_refused_total',
      help: 'CNI IP requests refused for want of a free IP (ReturnCode 32); a retried request counts again.',
      registers,
    });
    this.#httpRequests = new Counter({
      name: 'pool_monitor_node_api_requests_total',
      help: 'Node API requests, by method, route and status code.',
      labelNames: ['method', 'route', 'code'],
      registers,
    });
    this.#httpDuration = new Histogram({
      name: 'pool_monitor_node_api_request_duration_seconds',
      help: 'Node API request handling time.',
      labelNames: ['method', 'route'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.#idleAccount = new IdleAccountMetrics(this.registry);
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Sets every pool gauge from the monitor's state and the store's counts. */
  observePool(observation: PoolObservation, counts: StateCounts): void {
    const families: FamilyObservation[] =
      observation.families !== undefined && observation.families.length > 0
        ? observation.families
        : [
            {
              family: 'IPv4',
              ...(observation.subnet !== undefined ? { subnet: observation.subnet } : {}),
              ...(observation.subnetCIDR !== undefined
                ? { subnetCIDR: observation.subnetCIDR }
                : {}),
              ...(observation.podnetARMID !== undefined
                ? { podnetARMID: observation.podnetARMID }
                : {}),
              ...(observation.primaryIPs !== undefined
                ? { primaryIPs: observation.primaryIPs }
                : {}),
              exhausted: observation.exhausted === true,
              counts,
            },
          ];
    const labelled = families.map((f) => ({ f, labels: seriesLabels(f) }));
    // A changed subnet or family would leave stale series behind: drop them first.
    const key = JSON.stringify(labelled.map((l) => l.labels));
    if (this.#labelKey !== undefined && this.#labelKey !== key) {
      for (const gauge of Object.values(this.#pool)) gauge.reset();
    }
    this.#labelKey = key;
    for (const { f, labels } of labelled) this.#observeFamily(observation, f, labels);
    this.#demand.set(finite(observation.demand));
    this.#target.set(finite(observation.target));
    if (observation.idleAccount) this.#idleAccount.set(observation.idleAccount);
  }

  /** The CNS gauges of one family: its counts, the request, max and batch every family shares. */
  #observeFamily(
    observation: PoolObservation,
    f: FamilyObservation,
    labels: Partial<Record<CnsLabel, string>>,
  ): void {
    const all = { ...labels, [CUSTOMER_LABEL.name]: CUSTOMER_LABEL.value };
    const c = f.counts;
    const secondary = c.Available + c.Assigned + c.PendingRelease + c.PendingProgramming;
    const primary = finite(f.primaryIPs);
    // Each family's containers hold spec.requestedIPCount addresses.
    const request = finite(observation.request);
    const p = this.#pool;
    p.requested.set(all, request);
    p.available.set(all, c.Available);
    p.allocated.set(all, c.Assigned);
    p.pendingRelease.set(all, c.PendingRelease);
    p.pendingProgramming.set(all, c.PendingProgramming);
    p.secondary.set(all, secondary);
    p.primary.set(all, primary);
    p.total.set(all, secondary + primary);
    p.max.set(all, finite(observation.max));
    p.batch.set(all, finite(observation.batch));
    p.currentAvailable.set(all, secondary - c.Assigned - c.PendingRelease);
    p.expectAvailable.set(all, request - c.Assigned);
    p.exhaustion.set(all, f.exhausted === true ? 1 : 0);
    this.#exhaustionCount.inc({
      ...labels,
      subnet_exhaustion_state: f.exhausted === true ? 'exhausted' : 'not_exhausted',
    });
  }

  /** One pod's wait for its address (PodWaitTracker). */
  observeWait(seconds: number): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.#podWait.observe(seconds);
  }

  countRefused(): void {
    this.#refused.inc();
  }

  countReconcile(outcome: string): void {
    this.#reconciles.inc({ outcome: safeLabel(outcome) });
  }

  countWrite(ok: boolean): void {
    this.#writes.inc({ result: ok ? 'success' : 'failure' });
  }

  /** One node API request; `route` must be a bounded set (the matched route). */
  observeHttp(method: string, route: string, code: number, seconds: number): void {
    const m = safeLabel(method);
    const r = route.length <= 64 ? route : 'other';
    this.#httpRequests.inc({ method: m, route: r, code: String(code) });
    if (Number.isFinite(seconds) && seconds >= 0) {
      this.#httpDuration.observe({ method: m, route: r }, seconds);
    }
  }

  /**
   * Registers where the pool gauges come from; it is read on every scrape so
   * the gauges are never older than the scrape. Return undefined before the
   * monitor has anything to say (the gauges then keep their last values).
   */
  setPoolSource(
    source: () => { observation: PoolObservation; counts: StateCounts } | undefined,
  ): void {
    this.#source = source;
  }

  /** The Prometheus text exposition of every series in this registry. */
  async render(): Promise<string> {
    const current = this.#source?.();
    if (current) this.observePool(current.observation, current.counts);
    return this.registry.metrics();
  }
}
