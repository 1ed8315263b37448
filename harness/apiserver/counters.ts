// Request counters by verb, resource and subresource (and response code),
// readable in-process (the embedded report counts NNC writes with them) and
// exported as Prometheus text on /metrics.
import { Counter, Registry } from 'prom-client';

export interface CounterEntry {
  verb: string;
  resource: string;
  subresource: string;
  code: number;
  count: number;
}

export const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'] as const;

export interface RequestCounters {
  /** Requests with this verb on this resource (`nodenetworkconfigs`, `nodenetworkconfigs/status`), any code. */
  count(verb: string, resource: string): number;
  /** Write requests (create/update/patch/delete) on a resource, its subresources included. */
  writes(resource: string): number;
  /** Every counter. */
  entries(): CounterEntry[];
}

export class RequestCounter implements RequestCounters {
  private readonly counts = new Map<string, CounterEntry>();
  readonly registry = new Registry();
  private readonly prom = new Counter({
    name: 'apiserver_request_total',
    help: 'Requests served, by verb, resource, subresource and HTTP code.',
    labelNames: ['verb', 'resource', 'subresource', 'code'] as const,
    registers: [this.registry],
  });

  record(verb: string, resource: string, subresource: string, code: number): void {
    const key = `${verb}\u0000${resource}\u0000${subresource}\u0000${code}`;
    const e = this.counts.get(key);
    if (e) e.count++;
    else this.counts.set(key, { verb, resource, subresource, code, count: 1 });
    this.prom.inc({ verb, resource, subresource, code: String(code) });
  }

  count(verb: string, resource: string): number {
    const [res, sub = ''] = resource.split('/');
    let n = 0;
    for (const e of this.counts.values())
      if (e.verb === verb && e.resource === res && e.subresource === sub) n += e.count;
    return n;
  }

  writes(resource: string): number {
    let n = 0;
    for (const e of this.counts.values())
      if (e.resource === resource && (WRITE_VERBS as readonly string[]).includes(e.verb))
        n += e.count;
    return n;
  }

  entries(): CounterEntry[] {
    return [...this.counts.values()].map((e) => ({ ...e }));
  }

  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
