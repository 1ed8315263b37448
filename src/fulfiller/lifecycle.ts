// The NNC lifecycle as one pure decision per node
// (docs/design/fulfiller.md#nnc-lifecycle): every selected Node gets an NNC;
// a Node deleted takes its NNC with it, and its addresses once their
// quarantine is over (quarantine.ts: given back if the Node re-registers
// first); an NNC deleted while its Node lives is recreated with the
// addresses it held, never freed under a running pod. The inputs are
// what the fulfiller knows from its Node and NNC watches; the effects are the
// fulfiller's.

export type LifecycleAction =
  /** Nothing to do for this name. */
  | 'none'
  /** A live Node without an NNC: create it (then write its status). */
  | 'create'
  /** The NNC exists but the addresses its predecessor held are not in its status yet: write them. */
  | 'restore'
  /** The NNC and its Node are there: make the status follow the spec. */
  | 'status'
  /** The Node is gone: free what the NNC holds in the backend, then delete the NNC. */
  | 'delete'
  /** The Node is gone and so is its NNC, but addresses were kept for it: quarantine them. */
  | 'quarantine'
  /** The Node is gone, so is its NNC, and its quarantine is over: free its addresses. */
  | 'forget';

export interface LifecycleInput {
  /** The Node is in the watch's cache. */
  nodeExists: boolean;
  /** The Node matches --node-selector. */
  selected: boolean;
  /** The node's NNC exists (newest version read). */
  nncExists: boolean;
  /** Addresses of a deleted NNC are kept for this node. */
  retained: boolean;
  /** A deleted Node's quarantine (quarantine.ts): none recorded, still holding, or over. */
  quarantine?: 'none' | 'held' | 'over';
}

export function lifecycleAction(s: LifecycleInput): LifecycleAction {
  if (!s.nodeExists) {
    if (s.nncExists) return 'delete';
    if (!s.retained) return 'none';
    const q = s.quarantine ?? 'over';
    return q === 'over' ? 'forget' : q === 'none' ? 'quarantine' : 'none';
  }
  if (s.nncExists) return s.retained ? 'restore' : 'status';
  // An NNC deleted under a live Node comes back whatever the selector says:
  // its addresses are in use by that node's pods.
  return s.retained || s.selected ? 'create' : 'none';
}
