// The NNC lifecycle of one node name as one pure decision
// (docs/design/fulfiller.md#nnc-lifecycle), from the name's records
// (node-record.ts): the record of its live Node, if any, and those of Nodes
// of that name that are gone (an earlier incarnation, its NNC or its kept
// addresses). Every selected Node gets an NNC carrying the fulfiller's
// finalizer; a Node deleted takes its NNC with it, and its addresses once
// their quarantine is over; an NNC deleted while its Node lives, or a gone
// Node's NNC when a Node of its name comes back, is let go and its
// addresses go to the live Node's successor NNC, merged into its status,
// never freed under a running pod. Gone incarnations go first: the name is
// taken until their NNC has gone.

export type LifecycleAction =
  /** Nothing to do. */
  | 'none'
  /** A live Node without an NNC: create it (then write its status). */
  | 'create'
  /** Addresses kept for the live Node are not in its NNC's status yet: merge them in. */
  | 'restore'
  /** The NNC and its Node are there: make the status follow the spec. */
  | 'status'
  /** A live NNC without the fulfiller's finalizer or owner (made before it, or by hand): add them. */
  | 'adopt'
  /** A gone Node's NNC: delete it (the finalizer keeps it, terminating, as the quarantine's record). */
  | 'delete'
  /** A gone Node's terminating NNC whose quarantine is over: free its addresses, then remove the finalizer. */
  | 'release'
  /** A terminating NNC under a live Node of its name: its addresses to that Node, the finalizer off. */
  | 'replace'
  /** A gone Node's addresses are quarantined: look for its pods, wait for the grace. */
  | 'quarantined'
  /** Addresses kept for a gone Node without an NNC: quarantine them in memory. */
  | 'quarantine'
  /** Addresses kept for a gone Node go to a live Node of its name. */
  | 'transfer'
  /** A gone Node's memory-only quarantine is over: free its addresses. */
  | 'forget'
  /** The Node is not known deleted, only absent: read it before anything is done because it is gone. */
  | 'confirm';

export type QuarantineState = 'unrecorded' | 'held' | 'over';

export interface GoneIncarnation {
  key: string;
  /** Its Node is known deleted (not only absent from what the Node watch has shown). */
  confirmed: boolean;
  nnc?: { terminating: boolean; finalized: boolean };
  kept?: 'replaced' | 'rescued' | 'quarantine';
  quarantine: QuarantineState;
}

export interface LiveIncarnation {
  key: string;
  /** The Node matches --node-selector. */
  selected: boolean;
  nnc?: {
    terminating: boolean;
    finalized: boolean;
    /** Its ownerReference names this Node. */
    owned: boolean;
    /** A restore annotation is on it. */
    restoring: boolean;
  };
  /** Addresses are kept for it without its NNC's status holding them. */
  kept: boolean;
}

export interface NameState {
  live?: LiveIncarnation;
  gone: GoneIncarnation[];
}

export interface LifecycleDecision {
  action: LifecycleAction;
  /** The record the action is about. */
  key?: string;
}

export function lifecycleAction(s: NameState): LifecycleDecision {
  for (const g of s.gone) {
    const d = goneAction(g, s.live !== undefined);
    if (d !== 'none') return { action: d, key: g.key };
  }
  const l = s.live;
  if (!l) return { action: 'none' };
  const decide = (action: LifecycleAction): LifecycleDecision => ({ action, key: l.key });
  if (!l.nnc) {
    // The name is taken until a gone Node's NNC has gone.
    if (s.gone.some((g) => g.nnc)) return { action: 'none' };
    return decide(l.kept || l.selected ? 'create' : 'none');
  }
  if (l.nnc.terminating) return decide(l.nnc.finalized ? 'replace' : 'none');
  if (l.kept || l.nnc.restoring) return decide('restore');
  return decide(l.nnc.finalized && l.nnc.owned ? 'status' : 'adopt');
}

/** What is done because a Node is gone waits until its deletion is known, not only its absence. */
const DESTROYS: ReadonlySet<LifecycleAction> = new Set([
  'delete',
  'release',
  'quarantine',
  'forget',
]);

function goneAction(g: GoneIncarnation, nameLives: boolean): LifecycleAction {
  const action = goneActionOf(g, nameLives);
  return !g.confirmed && DESTROYS.has(action) ? 'confirm' : action;
}

function goneActionOf(g: GoneIncarnation, nameLives: boolean): LifecycleAction {
  if (g.nnc) {
    if (!g.nnc.terminating) return 'delete';
    // Not ours to finish: what it holds stays held while it exists, and kept when it goes.
    if (!g.nnc.finalized) return 'none';
    if (nameLives) return 'replace';
    return g.quarantine === 'over' ? 'release' : 'quarantined';
  }
  if (!g.kept) return 'none';
  if (nameLives) return 'transfer';
  if (g.kept !== 'quarantine') return 'quarantine';
  return g.quarantine === 'over' ? 'forget' : 'quarantined';
}
