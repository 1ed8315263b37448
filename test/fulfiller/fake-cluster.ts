// An in-memory stand-in for the API server's Node, NNC and CSS endpoints,
// with resourceVersion conflicts and injectable failures, that delivers every
// change back to the fulfiller as a watch would: at once (a microtask later),
// or, with `holdEvents`, only when the test releases them, in the order they
// were made (a watch stream is ordered; a test may drop some, as a watch
// that fails and re-lists skips them).
import type { Fulfiller } from '../../src/fulfiller/fulfiller.ts';
import type { NodeObject } from '../../src/fulfiller/nodes.ts';
import type {
  ClusterListApi,
  NncLifecycleApi,
  NncStatusApi,
  SubnetStateApi,
  SubnetStateStatus,
} from '../../src/fulfiller/ports.ts';
import type { NncSpec, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { ADDRESSES_FINALIZER, RESTORE_ANNOTATION } from '../../src/fulfiller/quarantine.ts';

export class ApiError extends Error {
  readonly code: number;
  readonly headers: Record<string, string> = {};
  constructor(code: number) {
    super(`HTTP-Code: ${code}`);
    this.code = code;
  }
}

const clone = <T>(v: T): T => structuredClone(v);

export type WatchDelivery =
  | { kind: 'nnc'; type: 'upsert' | 'delete'; object: NodeNetworkConfig }
  | { kind: 'node'; type: 'upsert' | 'delete'; object: NodeObject };

export class FakeCluster {
  readonly nncs = new Map<string, NodeNetworkConfig>();
  readonly nodes = new Map<string, NodeObject>();
  readonly css = new Map<string, SubnetStateStatus>();
  readonly cssWrites: Array<{ name: string } & SubnetStateStatus> = [];
  /**
   * Failures to inject into the next status writes: HTTP codes; 0 = the write
   * lands but the call fails with 504; -1 = a transport error (no answer, not landed);
   * 200 = this write succeeds.
   */
  readonly failWrites: number[] = [];
  /** With true, watch events wait in `held` until delivered by the test. */
  holdEvents = false;
  readonly held: WatchDelivery[] = [];
  writes = 0;
  creates = 0;
  deletes = 0;
  marks = 0;
  private rv = 0;
  private uids = 0;
  fulfiller?: Fulfiller;

  nextRv(): string {
    return String(++this.rv);
  }

  deliver(d: WatchDelivery): void {
    const f = this.fulfiller;
    if (!f) return;
    if (d.kind === 'nnc') {
      if (d.type === 'upsert') f.upsert(clone(d.object));
      else f.remove(clone(d.object));
    } else if (d.type === 'upsert') f.upsertNode(clone(d.object));
    else f.removeNode(clone(d.object));
  }

  private emit(d: WatchDelivery): void {
    const copy = { ...d, object: clone(d.object) } as WatchDelivery;
    if (this.holdEvents) this.held.push(copy);
    else queueMicrotask(() => this.deliver(copy));
  }

  addNode(name: string, extra: Partial<NodeObject> = {}): void {
    const node: NodeObject = {
      metadata: {
        name,
        uid: `node-uid-${++this.uids}`,
        resourceVersion: this.nextRv(),
        labels: {},
      },
      ...extra,
    };
    this.nodes.set(name, node);
    this.emit({ kind: 'node', type: 'upsert', object: node });
  }

  deleteNode(name: string): void {
    const node = this.nodes.get(name);
    if (node && (node.metadata?.finalizers ?? []).length > 0) {
      // A finalizer keeps it, terminating.
      const terminating = {
        ...node,
        metadata: {
          ...node.metadata,
          deletionTimestamp: new Date(0).toISOString(),
          resourceVersion: this.nextRv(),
        },
      };
      this.nodes.set(name, terminating);
      this.emit({ kind: 'node', type: 'upsert', object: terminating });
      return;
    }
    this.nodes.delete(name);
    if (node) {
      const gone = { ...node, metadata: { ...node.metadata, resourceVersion: this.nextRv() } };
      this.emit({ kind: 'node', type: 'delete', object: gone });
    }
  }

  /** Sets an NNC's spec, creating its Node and the NNC when missing (as the sidecar would see it). */
  setSpec(name: string, spec: NncSpec): void {
    if (!this.nodes.has(name)) this.addNode(name);
    const existing = this.nncs.get(name);
    const nnc: NodeNetworkConfig = existing
      ? { ...existing, spec: clone(spec) }
      : { metadata: { name, namespace: 'kube-system', uid: `uid-${name}` }, spec: clone(spec) };
    nnc.metadata = { ...nnc.metadata, resourceVersion: this.nextRv() };
    this.nncs.set(name, nnc);
    this.emit({ kind: 'nnc', type: 'upsert', object: nnc });
  }

  /**
   * `kubectl delete nnc NAME`: with finalizers it stays, terminating, until
   * they are removed (as the API server keeps it).
   */
  delete(name: string): void {
    const nnc = this.nncs.get(name);
    if (!nnc) return;
    if ((nnc.metadata.finalizers ?? []).length > 0) {
      if (nnc.metadata.deletionTimestamp) return;
      const terminating = {
        ...nnc,
        metadata: {
          ...nnc.metadata,
          deletionTimestamp: new Date().toISOString(),
          resourceVersion: this.nextRv(),
        },
      };
      this.nncs.set(name, terminating);
      this.emit({ kind: 'nnc', type: 'upsert', object: terminating });
      return;
    }
    this.nncs.delete(name);
    const gone = { ...nnc, metadata: { ...nnc.metadata, resourceVersion: this.nextRv() } };
    this.emit({ kind: 'nnc', type: 'delete', object: gone });
  }

  list(): NodeNetworkConfig[] {
    return [...this.nncs.values()].map(clone);
  }

  nodeList(): NodeObject[] {
    return [...this.nodes.values()].map(clone);
  }

  readonly nncApi: NncStatusApi = {
    get: async (name) => {
      const nnc = this.nncs.get(name);
      if (!nnc) throw new ApiError(404);
      return clone(nnc);
    },
    replaceStatus: async (body) => {
      const current = this.nncs.get(body.metadata.name);
      if (!current) throw new ApiError(404);
      const injected = this.failWrites.shift();
      if (injected === -1) throw new Error('socket hang up');
      if (injected !== undefined && injected !== 0 && injected !== 200)
        throw new ApiError(injected);
      if (body.metadata.resourceVersion !== current.metadata.resourceVersion)
        throw new ApiError(409);
      const next: NodeNetworkConfig = {
        ...current,
        status: clone(body.status),
        metadata: { ...current.metadata, resourceVersion: this.nextRv() },
      };
      this.nncs.set(next.metadata.name, next);
      this.writes++;
      this.emit({ kind: 'nnc', type: 'upsert', object: next });
      if (injected === 0) throw new ApiError(504); // landed, but the caller cannot know
      return clone(next);
    },
  };

  readonly lifecycleApi: NncLifecycleApi = {
    create: async (owner, restore) => {
      if (this.nncs.has(owner.name)) throw new ApiError(409);
      const nnc: NodeNetworkConfig = {
        metadata: {
          name: owner.name,
          namespace: 'kube-system',
          uid: `uid-${owner.name}-${++this.uids}`,
          resourceVersion: this.nextRv(),
          finalizers: [ADDRESSES_FINALIZER],
          ...(owner.uid
            ? {
                ownerReferences: [
                  { apiVersion: 'v1', kind: 'Node', name: owner.name, uid: owner.uid },
                ],
              }
            : {}),
          ...(restore ? { annotations: { [RESTORE_ANNOTATION]: JSON.stringify(restore) } } : {}),
        },
        spec: {},
      };
      this.nncs.set(owner.name, nnc);
      this.creates++;
      this.emit({ kind: 'nnc', type: 'upsert', object: nnc });
      return clone(nnc);
    },
    markTerm: async (name, term) => {
      const current = this.nncs.get(name);
      if (!current) throw new ApiError(404);
      const next: NodeNetworkConfig = {
        ...current,
        metadata: {
          ...current.metadata,
          annotations: {
            ...current.metadata.annotations,
            'pool-monitor.acn.azure.com/leader-term': term,
          },
          resourceVersion: this.nextRv(),
        },
      };
      this.nncs.set(name, next);
      this.marks++;
      this.emit({ kind: 'nnc', type: 'upsert', object: next });
      return clone(next);
    },
    delete: async (name, uid) => {
      const nnc = this.nncs.get(name);
      if (!nnc) return;
      if (uid && nnc.metadata.uid !== uid) throw new ApiError(409);
      this.deletes++;
      this.delete(name);
    },
    clearRestore: async (name) => {
      const current = this.nncs.get(name);
      if (!current) throw new ApiError(404);
      const annotations = { ...current.metadata.annotations };
      delete annotations[RESTORE_ANNOTATION];
      const next: NodeNetworkConfig = {
        ...current,
        metadata: { ...current.metadata, annotations, resourceVersion: this.nextRv() },
      };
      this.nncs.set(name, next);
      this.emit({ kind: 'nnc', type: 'upsert', object: next });
      return clone(next);
    },
    setNodeRestore: async (read, restore) => {
      const name = read.metadata?.name ?? '';
      const current = this.nodes.get(name);
      if (!current) throw new ApiError(404);
      if (current.metadata?.uid !== read.metadata?.uid) throw new ApiError(422);
      if (current.metadata?.resourceVersion !== read.metadata?.resourceVersion)
        throw new ApiError(409);
      const annotations = { ...current.metadata?.annotations };
      const finalizers = (current.metadata?.finalizers ?? []).filter(
        (f) => f !== ADDRESSES_FINALIZER,
      );
      if (restore) {
        annotations[RESTORE_ANNOTATION] = JSON.stringify(restore);
        finalizers.push(ADDRESSES_FINALIZER);
      } else delete annotations[RESTORE_ANNOTATION];
      const next: NodeObject = {
        ...current,
        metadata: {
          ...current.metadata,
          annotations,
          finalizers,
          resourceVersion: this.nextRv(),
        },
      };
      if (next.metadata?.deletionTimestamp && finalizers.length === 0) {
        this.nodes.delete(name);
        this.emit({ kind: 'node', type: 'delete', object: next });
      } else {
        this.nodes.set(name, next);
        this.emit({ kind: 'node', type: 'upsert', object: next });
      }
      return clone(next);
    },
    setFinalizers: async (body, finalizers, owner) => {
      const current = this.nncs.get(body.metadata.name);
      if (!current) throw new ApiError(404);
      if (body.metadata.resourceVersion !== current.metadata.resourceVersion)
        throw new ApiError(409);
      const next: NodeNetworkConfig = {
        ...current,
        metadata: {
          ...current.metadata,
          finalizers: [...finalizers],
          ...(owner?.uid
            ? {
                ownerReferences: [
                  { apiVersion: 'v1', kind: 'Node', name: owner.name, uid: owner.uid },
                ],
              }
            : {}),
          resourceVersion: this.nextRv(),
        },
      };
      if (next.metadata.deletionTimestamp && finalizers.length === 0) {
        this.nncs.delete(next.metadata.name);
        this.emit({ kind: 'nnc', type: 'delete', object: next });
      } else {
        this.nncs.set(next.metadata.name, next);
        this.emit({ kind: 'nnc', type: 'upsert', object: next });
      }
      return clone(next);
    },
  };

  /** How many of the next lists fail (503), as a standby's reads during an API hiccup. */
  failLists = 0;

  /** Fresh lists at the current resourceVersion (a new leader's first read). */
  readonly listApi: ClusterListApi = {
    listNncs: async () => {
      if (this.failLists > 0 && this.failLists--) throw new ApiError(503);
      return { items: this.list(), resourceVersion: String(this.rv) };
    },
    listNodes: async () => ({ items: this.nodeList(), resourceVersion: String(this.rv) }),
    getNode: async (name) => {
      const node = this.nodes.get(name);
      return node ? clone(node) : undefined;
    },
  };

  readonly cssApi: SubnetStateApi = {
    publish: async (name, status) => {
      this.css.set(name, { ...status });
      this.cssWrites.push({ name, ...status });
    },
  };

  /** Every secondary and primary IP in every NNC status, with its owner. */
  holders(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const nnc of this.nncs.values()) {
      for (const nc of nnc.status?.networkContainers ?? []) {
        const ips = [nc.primaryIP, ...(nc.ipAssignments ?? []).map((a) => a.ip)];
        for (const ip of ips) if (ip) out.set(ip, [...(out.get(ip) ?? []), nnc.metadata.name]);
      }
    }
    return out;
  }
}
