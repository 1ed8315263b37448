// What `embedded --backend azure` adds to the report: ARM requests by
// operation and status (as the emulator answered them), NIC PUTs per node,
// and with layout mixed what became of the node no layout fits.
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
  /** Layout mixed: the node no layout fits (unfit-node.ts). */
  unfit?: UnfitNodeOutcome;
  /** With the other writers on (azure.ts): what they removed and what became of it. */
  otherWriters?: OtherWritersOutcome;
}

export interface OtherWritersOutcome {
  /** ipConfigurations the other writers removed (the NC primary counted too). */
  removed: number;
  /** Back on the same NIC with the same address at the end of the run. */
  restored: number;
  /** Not (their address taken meanwhile; a scale-set instance's, or released since). */
  lost: number;
  byWriter: Record<string, number>;
  /** Their writes ARM refused (an operation in progress). */
  skipped: number;
}

/** The unfit node's name (its VM's too). */
export const UNFIT_NODE = 'node-unfit';
/** What its NNC asks for: one default batch. */
export const UNFIT_REQUEST = 16;
/** The reason of the fulfiller's Warning Event for a VM with no NIC in the pod subnet. */
export const UNFIT_REASON = 'NicNotInPodSubnet';

export interface UnfitNodeOutcome {
  node: string;
  /** Warning Events with UNFIT_REASON on its NNC, and their total count (an Event repeats by count). */
  events: number;
  eventCount: number;
  /** ARM writes (NIC PUTs, scale-set VM updates) for its VM: 0 expected. */
  armWrites: number;
  requested: number;
  allocated: number;
}

/** The report's line for the unfit node. */
export function unfitNodeLine(u: UnfitNodeOutcome): string {
  return (
    `  unfit node                   ${u.node} (no NIC in the pod subnet): ${u.events} ${UNFIT_REASON} ` +
    `Warning Event${u.events === 1 ? '' : 's'} (count ${u.eventCount}), ${u.armWrites} ARM writes, ` +
    `requested ${u.requested}, allocated ${u.allocated}`
  );
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
    ...(r.unfit ? [unfitNodeLine(r.unfit)] : []),
    ...(r.otherWriters
      ? [
          `  removed by other writers     ${r.otherWriters.removed} ipConfigurations (${Object.entries(
            r.otherWriters.byWriter,
          )
            .map(([k, n]) => `${k} ${n}`)
            .join(
              ', ',
            )}): ${r.otherWriters.restored} restored with their addresses, ${r.otherWriters.lost} not (replaced); ${r.otherWriters.skipped} of their writes refused`,
        ]
      : []),
  ];
}
