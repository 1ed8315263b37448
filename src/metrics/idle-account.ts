// The idle account of `--release-delay auto` on /metrics: the pool's idle
// IP-seconds next to what CNS v2 would have held on the same demand (since
// start and over the window: the current hour and the 23 before it), the budget and what is left of it, and the
// NNC writes CNS v2 would have made. Every series carries the policy's name
// and exists only once a policy with an account has reported one.
import { Gauge, type Registry } from 'prom-client';
import type { IdleAccountView } from '../scaling/policies/budget/idle-budget.ts';

/** What the gauges show: the policy's account and the writes the monitor made. */
export interface IdleAccountFigures {
  policy: string;
  account: IdleAccountView;
  /** NNC spec writes the monitor made (successful). */
  writes: number;
}

export class IdleAccountMetrics {
  readonly #idle: Gauge<'policy' | 'pool' | 'span'>;
  readonly #budget: Gauge<'policy'>;
  readonly #left: Gauge<'policy'>;
  readonly #cnsWrites: Gauge<'policy'>;
  readonly #saved: Gauge<'policy'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#idle = new Gauge({
      name: 'pool_monitor_idle_ip_seconds',
      help: 'Idle IP-seconds (IPs held beyond demand, integrated): pool="held" as this node held them, pool="cns_v2" what CNS v2 would have held on the same demand and control plane (one round at a time, at the speed measured on this pool\'s rounds); span="start" since the sidecar started, span="window" over the current hour and the 23 whole hours before it (hourly buckets; the account survives a restart, docs/decisions/0034).',
      labelNames: ['policy', 'pool', 'span'],
      registers,
    });
    this.#budget = new Gauge({
      name: 'pool_monitor_idle_budget_ratio',
      help: "The idle budget (--idle-budget): idle IP-seconds allowed as a multiple of what CNS v2 would have held on the same demand and control plane (one round of the node at a time, CNS v2's rounds as long as this pool's own last; docs/decisions/0034).",
      labelNames: ['policy'],
      registers,
    });
    this.#left = new Gauge({
      name: 'pool_monitor_idle_budget_left_ip_seconds',
      help: 'Idle IP-seconds the pool may still hold beyond CNS v2 within the budget (since the account began and over the window of the current hour and the 23 before it, the smaller); at or below 0 the pool follows the CNS v2 target.',
      labelNames: ['policy'],
      registers,
    });
    this.#cnsWrites = new Gauge({
      name: 'pool_monitor_cns_v2_nnc_writes',
      help: 'NNC spec writes CNS v2 would have made since start on the same demand.',
      labelNames: ['policy'],
      registers,
    });
    this.#saved = new Gauge({
      name: 'pool_monitor_nnc_writes_saved',
      help: 'NNC spec writes CNS v2 would have made since start minus the writes this monitor made.',
      labelNames: ['policy'],
      registers,
    });
  }

  set(f: IdleAccountFigures): void {
    const policy = f.policy.length <= 64 ? f.policy : 'other';
    const a = f.account;
    this.#idle.set({ policy, pool: 'held', span: 'start' }, a.heldIdleIpSeconds);
    this.#idle.set({ policy, pool: 'cns_v2', span: 'start' }, a.cnsV2IdleIpSeconds);
    this.#idle.set({ policy, pool: 'held', span: 'window' }, a.window.heldIdleIpSeconds);
    this.#idle.set({ policy, pool: 'cns_v2', span: 'window' }, a.window.cnsV2IdleIpSeconds);
    this.#budget.set({ policy }, a.budget);
    this.#left.set({ policy }, a.budgetLeftIpSeconds);
    this.#cnsWrites.set({ policy }, a.cnsV2Writes);
    this.#saved.set({ policy }, a.cnsV2Writes - f.writes);
  }
}
