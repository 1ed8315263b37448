// The one gate every status write passes (docs/decisions/0036; shared
// DESIGN.md "Address ownership, stated once"). An address enters a node's
// status only when no other record holds it: no other NNC, terminating ones
// included, no write in doubt, no quarantine, no addresses kept for
// another node, no other round's picks. An address leaves a status only when
// the node let it go (the sidecar's `spec.ipsNotInUse`, once the backend
// freed it) or the backend proves it gone (another writer removed it and
// it cannot come back; reported with an Event). Anything else fails closed:
// an address another record holds is withheld (kept out, the node tried
// again once it is free), and a status that would drop an address it may
// not is not written at all. It is the only code that builds a status
// (status.ts' statusOf), and status-write.ts the only code that sends one.
import type { NetworkContainer, NncStatus, NodeNetworkConfig, ScalerSpec } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { addressesOf } from './address-index.ts';
import type { NodeBook } from './node-book.ts';
import type { RecordView } from './node-record.ts';
import { statusOf } from './status.ts';

/** A status a round or a restore would write. */
export interface StatusProposal {
  /** The node's dynamic containers as they should be (one per address family). */
  containers: NetworkContainer[];
  requested: number;
  /** The subnet could not supply what was asked. */
  short: boolean;
  scaler: Required<ScalerSpec>;
  /** Addresses the status may lose: released by the node and freed, or proven gone. */
  mayDrop?: ReadonlySet<string>;
}

export type GateVerdict =
  | {
      kind: 'admit';
      status: NncStatus;
      /** Addresses the status adds (held as picks until the write is answered). */
      added: string[];
      /** Addresses kept out because another record holds them. */
      withheld: string[];
    }
  /** Nothing can be written now: a new container's primary IP is held elsewhere. */
  | { kind: 'wait'; withheld: string[] }
  /** It would drop addresses it may not: nothing is written. */
  | { kind: 'refuse'; dropped: string[] };

/** What the gate decides for a write of `record`'s NNC based on `base`. */
export function admit(
  book: NodeBook,
  record: RecordView,
  base: NodeNetworkConfig,
  proposal: StatusProposal,
): GateVerdict {
  const before = addressesOf(dynamicContainers(base));
  const proposed = addressesOf(proposal.containers);
  const dropped = [...before].filter(
    (ip) => !proposed.has(ip) && !(proposal.mayDrop?.has(ip) ?? false),
  );
  if (dropped.length > 0) return { kind: 'refuse', dropped };
  const withheld = [...proposed].filter((ip) => !before.has(ip) && book.heldByOthers(record, ip));
  const out = new Set(withheld);
  if (proposal.containers.some((nc) => out.has(nc.primaryIP ?? '')))
    return { kind: 'wait', withheld: withheld.sort() };
  const containers = proposal.containers.map((nc) => ({
    ...nc,
    ipAssignments: (nc.ipAssignments ?? []).filter((a) => !out.has(a.ip)),
  }));
  const status = statusOf({
    previous: base.status,
    containers,
    requested: proposal.requested,
    subnetShort: proposal.short,
    scaler: proposal.scaler,
  });
  const added = [...proposed].filter((ip) => !before.has(ip) && !out.has(ip));
  return { kind: 'admit', status, added, withheld: withheld.sort() };
}
