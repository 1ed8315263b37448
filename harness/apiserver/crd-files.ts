// Reads every CustomResourceDefinition in the YAML files of a directory.
// A process that starts many API servers (the tests start hundreds) parses
// each directory once while its files stay as they were (names, sizes and
// modification times); every caller gets its own copy.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { isObject, type KObject } from '../../src/kube/json-object.ts';

const parsed = new Map<string, { stamp: string; crds: KObject[] }>();

export function readCrdDir(dir: string): KObject[] {
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/i.test(f))
    .sort();
  const stamp = files
    .map((f) => {
      const st = statSync(join(dir, f));
      return `${f}:${st.size}:${st.mtimeMs}`;
    })
    .join('\n');
  let entry = parsed.get(dir);
  if (entry?.stamp !== stamp) {
    entry = { stamp, crds: parseCrdFiles(dir, files) };
    parsed.set(dir, entry);
  }
  return structuredClone(entry.crds);
}

function parseCrdFiles(dir: string, files: readonly string[]): KObject[] {
  const out: KObject[] = [];
  for (const f of files) {
    const path = join(dir, f);
    const docs = YAML.parseAllDocuments(readFileSync(path, 'utf8'));
    for (const doc of docs) {
      if (doc.errors.length > 0)
        throw new Error(`${path}: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
      const v: unknown = doc.toJS();
      if (isObject(v) && v.kind === 'CustomResourceDefinition' && isObject(v.metadata))
        out.push(v as KObject);
    }
  }
  return out;
}
