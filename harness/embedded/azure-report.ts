// What `embedded --backend azure` adds to the report: ARM requests by
// operation and status (as the emulator answered them) and NIC PUTs per node.
// Pure, so the report renders without loading the Azure SDK.

export type EmbeddedBackend = 'cidr' | 'azure';

/** The emulated VMs' layouts (EmulatedCloud): with --pod-subnet-id, or without. */
export const EMBEDDED_AZURE_LAYOUTS = ['mixed', 'node-subnets'] as const;
export type EmbeddedAzureLayout = (typeof EMBEDDED_AZURE_LAYOUTS)[number];
/** The node subnet of the emulated VNet (the scenario's pod subnet is the other). */
export const EMBEDDED_NODE_SUBNET = '10.224.0.0/16';

export interface AzureReport {
  /** The write budget. */
  qps: number;
  burst: number;
  /** The read budget. */
  readQps: number;
  readBurst: number;
  /** Every ARM request the emulator answered. */
  requests: number;
  reads: number;
  writes: number;
  /** 429s the emulator answered (ARM's buckets spent). */
  throttled: number;
  /** "operation status" → count, e.g. "NetworkInterfaces.CreateOrUpdate 200". */
  byOperationAndStatus: Record<string, number>;
  putsPerNode: { min: number; max: number; mean: number };
}

/** The report's Azure lines. */
export function azureReportLines(r: AzureReport): string[] {
  const ops = Object.entries(r.byOperationAndStatus)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
  const p = r.putsPerNode;
  return [
    `  ARM requests                 ${r.requests}${ops ? ` (${ops})` : ''}`,
    `  ARM writes, reads            ${r.writes} at ${r.qps} qps, burst ${r.burst}; ${r.reads} at ${r.readQps} qps, burst ${r.readBurst}; throttled (429) ${r.throttled}`,
    `  NIC PUTs per node            min ${p.min}, mean ${p.mean}, max ${p.max}`,
  ];
}
