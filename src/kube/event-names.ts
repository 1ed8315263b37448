// The name prefixes of the Events each component writes. A prefix names its
// writer, so a policy can keep each writer to its own Events: RBAC cannot
// (resourceNames does not restrict create, and Event names are made at
// write time). manifests/sidecar/event-names-policy.yaml enforces the
// sidecar's: the sidecar of node N writes only Events named
// pool-monitor-sidecar.N.REST where REST has no dot (sidecarOwnsEventName),
// never another node's, never the fulfiller's. REST has no dot because node
// names may have dots: were any REST allowed, the sidecar of node `n1` could
// write pool-monitor-sidecar.n1.x.*, node `n1.x`'s Events. Without a dot in
// REST, a name has one owner: the node is everything between the prefix and
// the last dot. The recorder (events.ts) makes such names. The same policy
// keeps the content to the node's own: about its NNC, from the sidecar.
// The fulfiller's prefix is its own by convention (no policy binds the
// control-plane component).
export const SIDECAR_EVENT_PREFIX = 'pool-monitor-sidecar.';
export const FULFILLER_EVENT_PREFIX = 'pool-monitor-fulfiller.';

/**
 * The sidecar's `source.component` / `reportingComponent`
 * (src/sidecar/nnc-events.ts); the policy admits no other.
 */
export const SIDECAR_EVENT_COMPONENT = 'azure-cns';

export const sidecarEventPrefix = (node: string): string => `${SIDECAR_EVENT_PREFIX}${node}.`;

/** Whether `name` is one of node `node`'s sidecar Event names, as the policy decides it. */
export function sidecarOwnsEventName(node: string, name: string): boolean {
  const prefix = sidecarEventPrefix(node);
  return (
    name.startsWith(prefix) && name.length > prefix.length && !name.includes('.', prefix.length)
  );
}
