// `make rbac-audit`: what the product was refused and which of its grants it
// never used, over every request the API server recorded for its service
// accounts — in the sidecar and fulfiller tests (RBAC_AUDIT_FILE lines from
// strictCluster().close()) and in embedded runs (`--report FILE`).
// Usage: node test/support/rbac-audit.ts FILE...   (exit 1 when anything
// was refused or granted in vain).
import { readFileSync } from 'node:fs';
import type { AuthorizationRecord } from '../../harness/apiserver/auth/decisions.ts';
import { accessObjects, serviceAccountOf, usernameOf } from '../../harness/embedded/access.ts';
import type { Component } from '../../harness/embedded/access.ts';
import type { EmbeddedReport } from '../../harness/embedded/run.ts';
import { readKustomization } from '../../harness/embedded/manifests.ts';
import { unusedGrants } from './rbac.ts';

/** The authorization records of one file (JSON lines of {decisions}, or an embedded report). */
export function recordsOf(text: string): AuthorizationRecord[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') && trimmed.includes('"access"')) {
    const report = JSON.parse(trimmed) as EmbeddedReport;
    return (['sidecar', 'fulfiller'] as const).flatMap((c) => [
      ...report.access[c].used,
      ...report.access[c].refused,
    ]);
  }
  return trimmed
    .split('\n')
    .filter((l) => l.trim() !== '')
    .flatMap((l) => (JSON.parse(l) as { decisions: AuthorizationRecord[] }).decisions);
}

export function audit(records: readonly AuthorizationRecord[]): string[] {
  const all = readKustomization();
  const objects = accessObjects(all);
  const lines: string[] = [];
  for (const c of ['sidecar', 'fulfiller'] as Component[]) {
    const sa = serviceAccountOf(all, c);
    const user = usernameOf(sa);
    const mine = records.filter((r) => r.user === user);
    const allowed = mine.filter((r) => r.allowed).reduce((n, r) => n + r.count, 0);
    lines.push(`${c} (${user}): ${allowed} requests allowed`);
    for (const r of mine.filter((x) => !x.allowed))
      lines.push(
        `  MISSING  ${r.verb} ${r.apiGroup || 'core'}/${r.resource}` +
          `${r.namespace ? ` in ${r.namespace}` : ''}${r.name ? ` (${r.name})` : ''}: refused ${r.count}x`,
      );
    for (const g of unusedGrants(objects, sa, mine)) lines.push(`  UNUSED   ${g}`);
  }
  return lines;
}

if (import.meta.main) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node test/support/rbac-audit.ts FILE...');
    process.exit(2);
  }
  const lines = audit(files.flatMap((f) => recordsOf(readFileSync(f, 'utf8'))));
  for (const l of lines) console.log(l);
  process.exit(lines.some((l) => /^\s+(MISSING|UNUSED)/.test(l)) ? 1 : 0);
}
