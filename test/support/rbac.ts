// The RBAC rules of a manifest file, flattened for exact comparison, and a
// check that a recorded request is granted by them (what an RBAC authorizer
// does for the subset the manifests use: groups, resources, subresources,
// resource names, verbs).
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

export interface RequestAttributes {
  verb: string;
  group: string;
  resource: string;
  name?: string;
}

/** What an API request asks for, from its method and URL (path and query). */
export function attributesOf(method: string, url: string): RequestAttributes | undefined {
  const u = new URL(url, 'http://x');
  const parts = u.pathname.split('/').filter(Boolean);
  let group: string;
  let rest: string[];
  if (parts[0] === 'api') [group, rest] = ['', parts.slice(2)];
  else if (parts[0] === 'apis') [group, rest] = [parts[1]!, parts.slice(3)];
  else return undefined;
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const [plural, objectName, sub] = rest;
  const watch = u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1';
  const verb =
    method === 'GET'
      ? objectName
        ? 'get'
        : watch
          ? 'watch'
          : 'list'
      : (
          { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as Record<
            string,
            string
          >
        )[method]!;
  const byField = /(?:^|,)metadata\.name=([^,]+)/.exec(
    u.searchParams.get('fieldSelector') ?? '',
  )?.[1];
  const name = objectName ?? byField;
  return { verb, group, resource: sub ? `${plural}/${sub}` : plural!, ...(name ? { name } : {}) };
}

export function allowed(rules: Rule[], a: RequestAttributes): boolean {
  return rules.some(
    (r) =>
      r.apiGroups.includes(a.group) &&
      r.resources.includes(a.resource) &&
      r.verbs.includes(a.verb) &&
      (!r.resourceNames || (a.name !== undefined && r.resourceNames.includes(a.name))),
  );
}
