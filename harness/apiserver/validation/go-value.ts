// Values as kube-apiserver prints them in a field error's "Invalid value: X"
// (k8s.io/apimachinery/pkg/util/validation/field/errors.go Error.ErrorBody:
// a pointer is dereferenced, nil is "null", strings are quoted, other values
// are printed with Go's %#v). Only the shapes this server's rules print.
import { isObject, type Json } from '../../../src/kube/json-object.ts';

const quote = (s: string): string => JSON.stringify(s);

/** A Go map[string]string with %#v: keys sorted, `map[string]string(nil)` when absent. */
export function goStringMap(v: Json | undefined): string {
  if (!isObject(v)) return 'map[string]string(nil)';
  const entries = Object.keys(v)
    .sort()
    .map((k) => `${quote(k)}:${quote(String(v[k]))}`);
  return `map[string]string{${entries.join(', ')}}`;
}

const goStrings = (v: Json | undefined): string =>
  Array.isArray(v) ? `[]string{${v.map((x) => quote(String(x))).join(', ')}}` : '[]string(nil)';

/** A metav1.LabelSelector with %#v (the value behind the *LabelSelector a rule reports). */
export function goLabelSelector(v: Json | undefined): string {
  if (!isObject(v)) return '"null"';
  const exprs = Array.isArray(v.matchExpressions)
    ? `[]v1.LabelSelectorRequirement{${v.matchExpressions
        .map((e) => {
          const r = isObject(e) ? e : {};
          return `v1.LabelSelectorRequirement{Key:${quote(String(r.key ?? ''))}, Operator:${quote(String(r.operator ?? ''))}, Values:${goStrings(r.values)}}`;
        })
        .join(', ')}}`
    : '[]v1.LabelSelectorRequirement(nil)';
  return `v1.LabelSelector{MatchLabels:${goStringMap(v.matchLabels)}, MatchExpressions:${exprs}}`;
}

/** A string field's value: %q. */
export const goString = quote;
