// An in-memory stand-in for the API server's NNC and CSS endpoints, with
// resourceVersion conflicts and injectable failures, that delivers every
// change back to the fulfiller as a watch would.
import type { Fulfiller } from '../../src/fulfiller/fulfiller.ts';
import type { NncStatusApi, SubnetStateApi, SubnetStateStatus } from '../../src/fulfiller/ports.ts';
import type { NncSpec, NodeNetworkConfig } from '../../src/nnc/types.ts';

export class ApiError extends Error {
  readonly code: number;
  readonly headers: Record<string, string> = {};
  constructor(code: number) {
    super(`HTTP-Code: ${code}`);
    this.code = code;
  }
}

const clone = <T>(v: T): T => structuredClone(v);

export class FakeCluster {
  readonly nncs = new Map<string, NodeNetworkConfig>();
  readonly css = new Map<string, SubnetStateStatus>();
  readonly cssWrites: Array<{ name: string } & SubnetStateStatus> = [];
  /** Failures to inject into the next status writes (HTTP codes; 0 = write lands but the call fails). */
  readonly failWrites: number[] = [];
  writes = 0;
  private rv = 0;
  fulfiller?: Fulfiller;

  private emit(nnc: NodeNetworkConfig): void {
    const copy = clone(nnc);
    queueMicrotask(() => this.fulfiller?.upsert(copy));
  }

  setSpec(name: string, spec: NncSpec): void {
    const existing = this.nncs.get(name);
    const nnc: NodeNetworkConfig = existing
      ? { ...existing, spec: clone(spec) }
      : { metadata: { name, namespace: 'kube-system', uid: `uid-${name}` }, spec: clone(spec) };
    nnc.metadata = { ...nnc.metadata, resourceVersion: String(++this.rv) };
    this.nncs.set(name, nnc);
    this.emit(nnc);
  }

  delete(name: string): void {
    const nnc = this.nncs.get(name);
    this.nncs.delete(name);
    if (nnc) queueMicrotask(() => this.fulfiller?.remove(clone(nnc)));
  }

  list(): NodeNetworkConfig[] {
    return [...this.nncs.values()].map(clone);
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
      if (injected !== undefined && injected !== 0) throw new ApiError(injected);
      if (body.metadata.resourceVersion !== current.metadata.resourceVersion)
        throw new ApiError(409);
      const next: NodeNetworkConfig = {
        ...current,
        status: clone(body.status),
        metadata: { ...current.metadata, resourceVersion: String(++this.rv) },
      };
      this.nncs.set(next.metadata.name, next);
      this.writes++;
      this.emit(next);
      if (injected === 0) throw new ApiError(504); // landed, but the caller cannot know
      return clone(next);
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
