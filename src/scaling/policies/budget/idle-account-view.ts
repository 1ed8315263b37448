// What the idle-IP account shows of itself (metrics, logs, the simulator's
// table): a plain view, apart from the policy so that policy.ts can name it
// without importing the budget policy that imports policy.ts.

/** The account as /debug/pool, /metrics and simulate --compare show it. */
export interface IdleAccountView {
  /** The budget: idle IP-seconds allowed, as a multiple of CNS v2's. */
  budget: number;
  /** Counting since (ms); absent until the first live observation. */
  since?: number;
  heldIdleIpSeconds: number;
  cnsV2IdleIpSeconds: number;
  /** held / CNS v2 (1 when both are 0). */
  idleRatio: number;
  window: {
    seconds: number;
    heldIdleIpSeconds: number;
    cnsV2IdleIpSeconds: number;
    idleRatio: number;
  };
  /** Idle IP-seconds the pool may still hold beyond CNS v2 (negative: overspent, following the target). */
  budgetLeftIpSeconds: number;
  /** NNC writes and IP churn CNS v2 would have made on the same demand. */
  cnsV2Writes: number;
  cnsV2Churn: number;
  /** The pool's own IP churn (the status's gains plus losses). */
  churn: number;
  /**
   * The fixed delays simulated on the same demand (shadows.ts): each one's
   * idle as a multiple of CNS v2's (since start and over the window), its
   * writes and churn, whether it fits the budget, and its recent pace beyond
   * it; `following` is the one whose holds auto keeps now (0: none fits,
   * auto alone within the budget).
   */
  following?: number;
  delays?: DelayFigures[];
  /** The account came through restarts: the last save it resumed from (ms) and how many. */
  resumed?: { from: number; times: number };
  /** The account as the node store keeps it (carried.ts); not shown on /debug/pool. */
  carry?: unknown;
}

export interface DelayFigures {
  seconds: number;
  idleRatio: number;
  windowIdleRatio: number;
  writes: number;
  churn: number;
  fits: boolean;
  /**
   * What it held idle beyond the budget over the last PACE_BUCKETS hours
   * (shadows.ts `Pace`): it is followed only while budgetLeftIpSeconds
   * covers this.
   */
  paceBeyondBudgetIpSeconds: number;
}
