// How long a backend takes to carry out one round of a node's fulfilment:
// data only, no imports, so that a double (the ARM emulator) may read the
// same table as the simulator without importing a rule of the product.
// The simulator's draws from it are in fulfil-timing.ts.

/**
 * ARM's long-running NIC and scale-set VM writes, ms [shortest, longest]:
 * NIC operations take 10–60 s, scale-set VM updates longer
 * (docs/design/fulfiller.md, Budgets and workers; azure-cli#25253). The
 * emulator's `realistic` timing (harness/azure-emulator/operations.ts)
 * draws from the same ranges, uniformly.
 */
export const AZURE_OPERATION_MS = {
  nic: [10_000, 60_000],
  vm: [30_000, 120_000],
} as const;

/**
 * ARM's Retry-After on a long-running write and on each poll that finds it
 * InProgress (the emulator's `realistic` timing answers 10 s). The SDK's
 * poller (@azure/core-lro, `pollUntilDone`) polls once at once, then after
 * each Retry-After, so a round ends at the first poll after its operation.
 */
export const ARM_POLL_RETRY_AFTER_MS = 10_000;

/**
 * A CIDR round is one status write to the API server, ms [fastest,
 * slowest]: kube-apiserver's SLO for mutating calls on a single object is
 * a 99th percentile of at most 1 s per cluster-day
 * (kubernetes/community, sig-scalability/slos/api_call_latency.md).
 */
export const KUBE_STATUS_WRITE_MS = [20, 1_000] as const;
