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
}
