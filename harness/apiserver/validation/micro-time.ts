// metav1.MicroTime as kube-apiserver decodes it: its UnmarshalJSON
// (k8s.io/apimachinery/pkg/apis/meta/v1/micro_time.go) parses the string with
// Go's time.Parse and the layout RFC3339Micro, "2006-01-02T15:04:05.000000Z07:00"
// (exactly six fractional digits), and a failure fails the decoding of the
// whole body: 400, `Lease in version "v1" cannot be handled as a Lease:
// parsing time "..." as "2006-01-02T15:04:05.000000Z07:00": cannot parse "..." as "..."`.
// The error texts follow Go's time.Parse (src/time/format.go: ParseError.Error,
// the element that failed, or "<element> out of range", or "extra text").
import { badRequest, type ApiError } from '../errors.ts';
import { isObject, type Json, type KObject } from '../../../src/kube/json-object.ts';
import type { ResourceInfo } from '../resources.ts';

export const RFC3339_MICRO = '2006-01-02T15:04:05.000000Z07:00';

const digits = (s: string, n: number): number | undefined =>
  new RegExp(`^\\d{${n}}`).test(s) ? Number(s.slice(0, n)) : undefined;

/** Go's time.Parse(RFC3339Micro, value) error text, or undefined when it parses. */
export function microTimeError(value: string): string | undefined {
  const q = JSON.stringify;
  const cannot = (rest: string, elem: string): string =>
    `parsing time ${q(value)} as ${q(RFC3339_MICRO)}: cannot parse ${q(rest)} as ${q(elem)}`;
  const range = (what: string): string => `parsing time ${q(value)}: ${what} out of range`;
  let rest = value;
  const num = (elem: string, n: number, max: number, what: string, min = 0): string | undefined => {
    const v = digits(rest, n);
    if (v === undefined) return cannot(rest, elem);
    rest = rest.slice(n);
    return v < min || v > max ? range(what) : undefined;
  };
  const lit = (c: string): string | undefined => {
    if (!rest.startsWith(c)) return cannot(rest, c);
    rest = rest.slice(1);
    return undefined;
  };
  const steps: (() => string | undefined)[] = [
    () => num('2006', 4, 9999, 'year'),
    () => lit('-'),
    () => num('01', 2, 12, 'month', 1),
    () => lit('-'),
    () => num('02', 2, 31, 'day', 1),
    () => lit('T'),
    () => num('15', 2, 23, 'hour'),
    () => lit(':'),
    () => num('04', 2, 59, 'minute'),
    () => lit(':'),
    () => num('05', 2, 59, 'second'),
    () => {
      if (rest.length < 7 || rest[0] !== '.' || digits(rest.slice(1), 6) === undefined)
        return cannot(rest, '.000000');
      rest = rest.slice(7);
      return undefined;
    },
    () => {
      if (rest.startsWith('Z')) {
        rest = rest.slice(1);
        return undefined;
      }
      if (rest.length < 6 || rest[3] !== ':' || !/^[+-]\d\d:\d\d/.test(rest))
        return cannot(rest, 'Z07:00');
      rest = rest.slice(6);
      return undefined;
    },
  ];
  for (const step of steps) {
    const err = step();
    if (err !== undefined) return err;
  }
  if (rest.length > 0) return `parsing time ${q(value)}: extra text: ${q(rest)}`;
  const [y, m, d] = [
    Number(value.slice(0, 4)),
    Number(value.slice(5, 7)),
    Number(value.slice(8, 10)),
  ];
  if (d > new Date(Date.UTC(y, m, 0)).getUTCDate()) return range('day');
  return undefined;
}

/** The MicroTime fields of the built-in kinds this server serves (k8s.io/api types). */
const MICRO_TIME_FIELDS: Record<string, string[][]> = {
  'coordination.k8s.io/leases': [
    ['spec', 'acquireTime'],
    ['spec', 'renewTime'],
  ],
  events: [['eventTime'], ['series', 'lastObservedTime']],
};

/** The decoding error of the first MicroTime field of `o` that does not parse. */
export function microTimeDecodeError(res: ResourceInfo, o: KObject): ApiError | undefined {
  if (res.crdName !== undefined) return undefined;
  const paths = MICRO_TIME_FIELDS[res.group ? `${res.group}/${res.plural}` : res.plural] ?? [];
  for (const path of paths) {
    let v: Json | undefined = o;
    for (const k of path) v = isObject(v) ? v[k] : undefined;
    if (v === undefined || v === null) continue;
    const err =
      typeof v === 'string'
        ? microTimeError(v)
        : `json: cannot unmarshal ${typeof v === 'number' ? 'number' : Array.isArray(v) ? 'array' : typeof v === 'boolean' ? 'bool' : 'object'} into Go value of type string`;
    if (err !== undefined)
      return badRequest(
        `${res.kind} in version "${res.version}" cannot be handled as a ${res.kind}: ${err}`,
      );
  }
  return undefined;
}
