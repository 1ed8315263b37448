// The LeaseApi over a real API server: one coordination.k8s.io/v1 Lease,
// read, created and replaced with its resourceVersion (client-node 2.x).
// MicroTime fields are sent as strings with six fractional digits, as
// Kubernetes parses them (client-node has no serializer for MicroTime and
// passes strings through).
import { CoordinationV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1Lease } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import type { LeaseApi } from './elector.ts';
import type { LeaseRecord, LeaseState } from './lease.ts';

/** A Lease object (as read or watched) as the elector sees it. */
export function stateOf(lease: V1Lease): LeaseState {
  const s = (lease.spec ?? {}) as Record<string, unknown>;
  const time = (v: unknown): string =>
    typeof v === 'string' ? v : v instanceof Date ? v.toISOString() : '';
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    record: {
      holderIdentity: typeof s.holderIdentity === 'string' ? s.holderIdentity : '',
      leaseDurationSeconds: typeof s.leaseDurationSeconds === 'number' ? s.leaseDurationSeconds : 0,
      acquireTime: time(s.acquireTime),
      renewTime: time(s.renewTime),
      leaseTransitions: typeof s.leaseTransitions === 'number' ? s.leaseTransitions : 0,
    },
  };
}

export function kubeLeaseApi(kc: KubeConfig, namespace: string, name: string): LeaseApi {
  const api = kc.makeApiClient(CoordinationV1Api);
  const body = (record: LeaseRecord, resourceVersion?: string): V1Lease =>
    ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: { ...record },
    }) as unknown as V1Lease;
  return {
    async get() {
      try {
        return stateOf(await api.readNamespacedLease({ name, namespace }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async create(record) {
      return stateOf(await api.createNamespacedLease({ namespace, body: body(record) }));
    },
    async update(record, resourceVersion) {
      return stateOf(
        await api.replaceNamespacedLease({ name, namespace, body: body(record, resourceVersion) }),
      );
    },
  };
}
