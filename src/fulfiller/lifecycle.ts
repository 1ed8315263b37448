// The NNC lifecycle as one pure decision per node
// (docs/design/fulfiller.md#nnc-lifecycle): every selected Node gets an NNC
// carrying the fulfiller's finalizer; a Node deleted takes its NNC with it,
// and its addresses once their quarantine is over (quarantine.ts). The NNC
// itself is the quarantine's record: whoever deletes it (the fulfiller, the
// garbage collector, a person) it stays, terminating, until the fulfiller
// has freed its addresses and removed the finalizer
// (docs/design/fulfiller.md#quarantine). An NNC deleted while its Node
// lives is let go and recreated with the addresses it held, never freed
// under a running pod. The inputs are what the fulfiller knows from its Node
// and NNC watches; the effects are the fulfiller's.

export type LifecycleAction =
  /** Nothing to do for this name. */
  | 'none'
  /** A live Node without an NNC: create it (then write its status). */
  | 'create'
  /** The NNC exists but the addresses its predecessor held are not in its status yet: write them. */
  | 'restore'
  /** The NNC and its Node are there: make the status follow the spec. */
  | 'status'
  /** A live NNC without the fulfiller's finalizer (made before it, or by hand): add it. */
  | 'adopt'
  /** The Node is gone: delete its NNC (with the finalizer on, so that it stays as the quarantine's record). */
  | 'delete'
  /** The Node is gone, its NNC terminating, its quarantine over: free the addresses, then remove the finalizer. */
  | 'release'
  /** The NNC is terminating under a live Node: keep its addresses, remove the finalizer, recreate it. */
  | 'replace'
  /** The Node is gone and so is its NNC, but addresses were kept for it: quarantine them. */
  | 'quarantine'
  /** The Node is gone, so is its NNC, and its quarantine is over: free its addresses. */
  | 'forget';

export interface LifecycleInput {
  /** The Node is in the watch's cache. */
  nodeExists: boolean;
  /** The Node matches --node-selector. */
  selected: boolean;
  /** The node's NNC exists (newest version read), terminating or not. */
  nncExists: boolean;
  /** The NNC has a deletionTimestamp. */
  terminating?: boolean;
  /** The NNC carries the fulfiller's finalizer. */
  finalized?: boolean;
  /** Addresses of a deleted NNC are kept for this node. */
  retained: boolean;
  /**
   * A deleted Node's quarantine (quarantine.ts): none recorded, still
   * holding, or over. Absent: there is no quarantine (addresses are freed
   * with their Node, in-memory tests).
   */
  quarantine?: 'none' | 'held' | 'over';
}

export function lifecycleAction(s: LifecycleInput): LifecycleAction {
  if (s.nncExists) return s.nodeExists ? liveNodeNnc(s) : goneNodeNnc(s);
  if (!s.nodeExists) {
    if (!s.retained) return 'none';
    const q = s.quarantine ?? 'over';
    return q === 'over' ? 'forget' : q === 'none' ? 'quarantine' : 'none';
  }
  // An NNC deleted under a live Node comes back whatever the selector says:
  // its addresses are in use by that node's pods.
  return s.retained || s.selected ? 'create' : 'none';
}

function liveNodeNnc(s: LifecycleInput): LifecycleAction {
  if (s.terminating) return s.finalized ? 'replace' : 'none'; // gone soon: then 'create'
  if (s.retained) return 'restore';
  return s.finalized || s.quarantine === undefined ? 'status' : 'adopt';
}

function goneNodeNnc(s: LifecycleInput): LifecycleAction {
  if (!s.terminating) return 'delete';
  // Not ours to finish (no finalizer of ours): its addresses stay in use
  // while it exists, and what it held is kept when it goes (fulfiller.remove).
  if (!s.finalized) return 'none';
  return s.quarantine === 'held' ? 'none' : 'release';
}
