// DaemonSet and Deployment (apps/v1) rules kube-apiserver applies that the
// product's manifests depend on:
//   - pkg/apis/apps/validation/validation.go ValidateDaemonSetSpec: the
//     template's labels must match the selector (a missing selector matches
//     nothing: metav1.LabelSelectorAsSelector(nil) is labels.Nothing()), an
//     empty selector is refused, the template's restartPolicy must be Always;
//   - same file, ValidateDeploymentSpec: the selector is required, must not be
//     empty, and must match the template's labels
//     (ValidatePodTemplateSpecForReplicaSet, which also wants restartPolicy
//     Always);
//   - pkg/registry/apps/daemonset/strategy.go and
//     pkg/registry/apps/deployment/strategy.go ValidateUpdate: on apps/v1 the
//     selector is immutable (apivalidation.ValidateImmutableField, compared
//     with apiequality.Semantic, where nil and empty lists are equal).
// A missing restartPolicy is defaulted to Always (pkg/apis/core/v1/defaults.go).
import type { StatusCause } from '../errors.ts';
import {
  deepEqual,
  isObject,
  type Json,
  type JsonObject,
  type KObject,
} from '../../../src/kube/json-object.ts';
import { matchesLabelSelector, type LabelSelectorSpec } from '../admission/label-selector.ts';
import { goLabelSelector, goString, goStringMap } from './go-value.ts';

const obj = (v: Json | undefined): JsonObject => (isObject(v) ? v : {});

function selectorSize(sel: JsonObject): number {
  const labels = isObject(sel.matchLabels) ? Object.keys(sel.matchLabels).length : 0;
  const exprs = Array.isArray(sel.matchExpressions) ? sel.matchExpressions.length : 0;
  return labels + exprs;
}

/** The selector as apiequality.Semantic compares it: nil and empty maps and lists alike. */
function normalSelector(v: Json | undefined): Json {
  if (!isObject(v)) return null;
  const labels = isObject(v.matchLabels) ? v.matchLabels : {};
  const exprs = Array.isArray(v.matchExpressions)
    ? v.matchExpressions.map((e) => {
        const r = obj(e);
        return {
          key: r.key ?? '',
          operator: r.operator ?? '',
          values: Array.isArray(r.values) ? r.values : [],
        };
      })
    : [];
  return { matchLabels: labels, matchExpressions: exprs };
}

export function validateWorkload(
  kind: 'DaemonSet' | 'Deployment',
  o: KObject,
  prev: KObject | undefined,
): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = obj(o.spec);
  const template = obj(spec.template);
  const labels = obj(template.metadata).labels;
  const selector = spec.selector;
  const invalid = (field: string, value: string, detail: string): void => {
    causes.push({
      reason: 'FieldValueInvalid',
      field,
      message: `Invalid value: ${value}: ${detail}`,
    });
  };
  if (kind === 'Deployment' && !isObject(selector))
    causes.push({
      reason: 'FieldValueRequired',
      field: 'spec.selector',
      message: 'Required value',
    });
  if (kind === 'Deployment' && isObject(selector) && selectorSize(selector) === 0)
    invalid('spec.selector', goLabelSelector(selector), 'empty selector is invalid for deployment');
  const templateLabels = (isObject(labels) ? labels : {}) as Record<string, string>;
  const matches =
    isObject(selector) && matchesLabelSelector(selector as LabelSelectorSpec, templateLabels);
  // An empty selector is labels.Everything(): Deployment's check skips it (selector.Empty()).
  if (!matches)
    invalid(
      'spec.template.metadata.labels',
      goStringMap(labels),
      '`selector` does not match template `labels`',
    );
  if (kind === 'DaemonSet' && isObject(selector) && selectorSize(selector) === 0)
    invalid('spec.selector', goLabelSelector(selector), 'empty selector is invalid for daemonset');
  const restart = obj(template.spec).restartPolicy;
  if (restart !== undefined && restart !== null && restart !== 'Always')
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'spec.template.spec.restartPolicy',
      message: `Unsupported value: ${goString(String(restart))}: supported values: "Always"`,
    });
  if (prev && !deepEqual(normalSelector(selector), normalSelector(obj(prev.spec).selector)))
    invalid('spec.selector', goLabelSelector(selector), 'field is immutable');
  return causes;
}
