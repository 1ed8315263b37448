// What every user other than system:masters asked for and whether it was
// allowed, counted by request attributes, and every write admission denied: the record that shows which
// permissions a component was refused and which of its grants it used
// (the embedded run's report, the RBAC audit of the tests). Members of
// system:masters are left out: they skip authorization, and the harness's
// own clients would flood it with a name per pod.
import type { RequestAttributes } from './rbac.ts';
import { MASTERS } from './user.ts';

export interface AuthorizationRecord {
  user: string;
  verb: string;
  /** Resource requests: group, `resource` or `resource/subresource`, namespace, name. */
  apiGroup: string;
  resource: string;
  namespace: string;
  name: string;
  /** Non-resource requests: the path ('' for resource requests). */
  path: string;
  allowed: boolean;
  count: number;
}

/** A write a ValidatingAdmissionPolicy denied. */
export interface AdmissionDenial {
  user: string;
  operation: string;
  apiGroup: string;
  resource: string;
  namespace: string;
  name: string;
  message: string;
}

/** Distinct records kept at most; later new ones are only counted (dropped()). */
const MAX_RECORDS = 50_000;

export class AuthorizationDecisions {
  private readonly records = new Map<string, AuthorizationRecord>();
  private readonly denials: AdmissionDenial[] = [];
  private droppedCount = 0;

  /** Records a denial by admission (the first MAX_RECORDS of them). */
  denied(d: AdmissionDenial): void {
    if (this.denials.length < MAX_RECORDS) this.denials.push(d);
    else this.droppedCount++;
  }

  admissionDenials(): AdmissionDenial[] {
    return this.denials.map((d) => ({ ...d }));
  }

  record(a: RequestAttributes, allowed: boolean): void {
    if (a.user.groups.includes(MASTERS)) return;
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const path = a.resourceRequest ? '' : a.path;
    const key = [a.user.username, a.verb, a.apiGroup, resource, a.namespace, a.name, path, allowed]
      .map(String)
      .join('\u0000');
    const known = this.records.get(key);
    if (known) {
      known.count++;
      return;
    }
    if (this.records.size >= MAX_RECORDS) {
      this.droppedCount++;
      return;
    }
    this.records.set(key, {
      user: a.user.username,
      verb: a.verb,
      apiGroup: a.apiGroup,
      resource,
      namespace: a.namespace,
      name: a.name,
      path,
      allowed,
      count: 1,
    });
  }

  entries(): AuthorizationRecord[] {
    return [...this.records.values()].map((r) => ({ ...r }));
  }

  /** Requests not recorded because the record was full. */
  dropped(): number {
    return this.droppedCount;
  }
}
