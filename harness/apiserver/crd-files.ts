// Reads every CustomResourceDefinition in the YAML files of a directory.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { isObject, type KObject } from '../../src/kube/json-object.ts';

export function readCrdDir(dir: string): KObject[] {
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/i.test(f))
    .sort();
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
