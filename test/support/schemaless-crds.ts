// The project's CRDs as a cluster may have them from an old or foreign
// install: no schema, so the API server refuses nothing for its shape and
// every malformed object reaches the components (the fuzz, and tests of what
// a component does with what a schema would have refused).
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CRDS_DIR } from './wait.ts';

/** The project's CRDs with their schemas replaced by "anything goes" (an old or foreign install). */
/** Writes them into `dir`/crds and returns that directory (for startApiServer's crdsDir). */
export function schemalessCrds(dir: string): string {
  const out = join(dir, 'crds');
  mkdirSync(out);
  for (const file of readdirSync(CRDS_DIR).filter((f) => f.endsWith('.yaml'))) {
    const crd = parse(readFileSync(join(CRDS_DIR, file), 'utf8')) as {
      kind?: string;
      spec?: { versions?: { schema?: unknown }[] };
    };
    if (crd?.kind !== 'CustomResourceDefinition') continue;
    for (const v of crd.spec?.versions ?? [])
      v.schema = {
        openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      };
    writeFileSync(join(out, file), JSON.stringify(crd));
  }
  return out;
}
