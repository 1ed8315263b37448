// The RBAC rules of a manifest file, flattened for exact comparison.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export function rulesOf(file: string): Rule[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as { rules?: Rule[] })
    .flatMap((doc) => doc.rules ?? []);
}

/** `group/resource[names]` → sorted verbs; core is "core". */
export function grants(rules: Rule[]): Record<string, string[]> {
  const out = new Map<string, string[]>();
  for (const rule of rules)
    for (const group of rule.apiGroups)
      for (const resource of rule.resources) {
        const names = rule.resourceNames ? `[${rule.resourceNames.join(',')}]` : '';
        const key = `${group || 'core'}/${resource}${names}`;
        out.set(key, [...(out.get(key) ?? []), ...rule.verbs].sort());
      }
  return Object.fromEntries(out);
}
