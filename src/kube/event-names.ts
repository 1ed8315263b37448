// The name prefixes of the Events each component writes. A prefix names its
// writer, so a policy can keep each writer to its own Events: RBAC cannot
// (resourceNames does not restrict create, and Event names are made at
// write time). manifests/sidecar/event-names-policy.yaml enforces the
// sidecar's: the sidecar of node N writes only Events whose name starts
// with pool-monitor-sidecar.N. — never another node's, never the
// fulfiller's. The fulfiller's prefix is its own by convention (no policy
// binds the control-plane component).
export const SIDECAR_EVENT_PREFIX = 'pool-monitor-sidecar.';
export const FULFILLER_EVENT_PREFIX = 'pool-monitor-fulfiller.';

export const sidecarEventPrefix = (node: string): string => `${SIDECAR_EVENT_PREFIX}${node}.`;
