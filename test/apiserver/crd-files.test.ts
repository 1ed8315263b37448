// The CRD directory is parsed once per process while its files stay as they
// were: a changed, added or removed file is read again, and no caller sees
// another caller's changes to what it was given.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCrdDir } from '../../harness/apiserver/crd-files.ts';

const crd = (name: string, plural: string): string =>
  [
    'apiVersion: apiextensions.k8s.io/v1',
    'kind: CustomResourceDefinition',
    `metadata: { name: ${name} }`,
    `spec: { group: example.com, names: { plural: ${plural}, kind: Thing }, scope: Namespaced }`,
    '',
  ].join('\n');

describe('apiserver: the CRD directory', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'crds-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const names = (): string[] => readCrdDir(dir).map((c) => c.metadata.name as string);

  it('reads each YAML file, and reads it again once it changed, was added or removed', () => {
    writeFileSync(join(dir, 'a.yaml'), crd('things.example.com', 'things'));
    expect(names()).to.deep.equal(['things.example.com']);
    // Another size: the stamp differs even within one mtime tick.
    writeFileSync(join(dir, 'a.yaml'), crd('widgets.example.com', 'widgets'));
    expect(names()).to.deep.equal(['widgets.example.com']);
    writeFileSync(join(dir, 'b.yml'), crd('gadgets.example.com', 'gadgets'));
    expect(names()).to.deep.equal(['widgets.example.com', 'gadgets.example.com']);
    rmSync(join(dir, 'a.yaml'));
    expect(names()).to.deep.equal(['gadgets.example.com']);
  });

  it('gives every caller its own copy', () => {
    writeFileSync(join(dir, 'a.yaml'), crd('things.example.com', 'things'));
    const first = readCrdDir(dir);
    (first[0] as { metadata: { name: string } }).metadata.name = 'changed';
    expect(names()).to.deep.equal(['things.example.com']);
  });

  it('still refuses a file that is not YAML', () => {
    writeFileSync(join(dir, 'bad.yaml'), 'a: [1, 2\n');
    expect(() => readCrdDir(dir)).to.throw(/bad\.yaml/);
  });
});
