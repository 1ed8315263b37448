// kube-apiserver's --feature-gates for the gates this server implements:
// `Name=bool[,Name=bool]`, parsed and refused with the messages of
// k8s.io/component-base/featuregate/feature_gate.go (Set).
//
// ServiceAccountTokenNodeBinding (TokenRequest may bind a token to a Node):
// alpha, off, in 1.29–1.30; beta, on, in 1.31–1.32; GA and locked on in 1.33
// (kubernetes/website content/en/docs/reference/command-line-tools-reference/
// feature-gates/ServiceAccountTokenNodeBinding.md). On by default here, as
// from 1.31; `=false` gives a 1.30 cluster's answer.

export interface FeatureGates {
  ServiceAccountTokenNodeBinding: boolean;
}

export const DEFAULT_FEATURE_GATES: Readonly<FeatureGates> = Object.freeze({
  ServiceAccountTokenNodeBinding: true,
});

export class FeatureGateError extends Error {
  override readonly name = 'FeatureGateError';
}

/** Go's strconv.ParseBool. */
function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

export function parseFeatureGates(text: string): FeatureGates {
  const gates: FeatureGates = { ...DEFAULT_FEATURE_GATES };
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    const name = (eq < 0 ? item : item.slice(0, eq)).trim();
    if (eq < 0) throw new FeatureGateError(`missing bool value for ${name}`);
    const value = item.slice(eq + 1).trim();
    if (!(name in DEFAULT_FEATURE_GATES))
      throw new FeatureGateError(`unrecognized feature gate: ${name}`);
    const b = parseBool(value);
    if (b === undefined)
      throw new FeatureGateError(
        `invalid value of ${name}=${value}, err: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
      );
    gates[name as keyof FeatureGates] = b;
  }
  return gates;
}
