// The seam between the product and @kubernetes/client-node's own files
// (src/kube/client-node.ts and the stand-ins of src/kube/lean/): fails when
// the installed package no longer matches what the seam was verified
// against. Every path inside the package the product imports is imported in
// the seam alone, exists, and exports the names taken from it; every file the
// resolve hooks reach into still imports the specifier they replace, and its
// stand-in exports every name it takes; the installed version is in the range
// the seam was verified against, which package.json pins. Which specifier
// goes to which stand-in: lean-stand-ins.test.ts.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { VERIFIED_CLIENT_NODE_RANGE } from '../../src/kube/client-node.ts';
import { STAND_INS } from '../../src/kube/lean/hooks.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PACKAGE = '@kubernetes/client-node';
const DIST_PREFIX = `${PACKAGE}/dist/`;
const DIST = path.join(ROOT, 'node_modules', PACKAGE, 'dist');
/** The files of the seam that may import the package's files by path. */
const SEAM = ['src/kube/client-node.ts', 'src/kube/lean/gen-index.ts'];

interface DeepImport {
  file: string;
  /** The path inside dist/, e.g. `cache.js`. */
  target: string;
  names: { name: string; typeOnly: boolean }[];
}

const parse = (file: string, text: string, kind: ts.ScriptKind): ts.SourceFile =>
  ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) yield* sourceFiles(rel);
    else if (entry.name.endsWith('.ts')) yield rel;
  }
}

/** The imports and re-exports of `file` from a path inside the package, with their names. */
function deepImportsOf(file: string): DeepImport[] {
  const source = parse(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptKind.TS);
  const found: DeepImport[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    const spec = statement.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith(DIST_PREFIX)) continue;
    const names: DeepImport['names'] = [];
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const bindings = clause?.namedBindings;
      if (clause?.name) names.push({ name: 'default', typeOnly: clause.isTypeOnly });
      if (bindings && ts.isNamedImports(bindings))
        for (const e of bindings.elements)
          names.push({
            name: (e.propertyName ?? e.name).text,
            typeOnly: clause.isTypeOnly || e.isTypeOnly,
          });
    } else if (statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const e of statement.exportClause.elements)
        names.push({
          name: (e.propertyName ?? e.name).text,
          typeOnly: statement.isTypeOnly || e.isTypeOnly,
        });
    }
    found.push({ file, target: spec.text.slice(DIST_PREFIX.length), names });
  }
  return found;
}

/** The names a compiled file of the package imports from `specifier` ('*' for a namespace). */
function namesImported(distFile: string, specifier: string): string[] | undefined {
  const text = readFileSync(path.join(DIST, distFile), 'utf8');
  const source = parse(distFile, text, ts.ScriptKind.JS);
  let names: string[] | undefined;
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement)) continue;
    const spec = statement.moduleSpecifier;
    if (!ts.isStringLiteral(spec) || spec.text !== specifier) continue;
    names ??= [];
    const clause = statement.importClause;
    if (clause?.name) names.push('default');
    const bindings = clause?.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) names.push('*');
    if (bindings && ts.isNamedImports(bindings))
      for (const e of bindings.elements) names.push((e.propertyName ?? e.name).text);
  }
  return names;
}

/** Whether a declaration file of the package exports the type or value `name`. */
function declares(dts: string, name: string): boolean {
  const text = readFileSync(path.join(DIST, dts), 'utf8');
  const declared = new RegExp(
    `export (declare )?(abstract )?(class|interface|type|enum|const|function) ${name}\\b`,
  );
  const listed = new RegExp(`export (type )?\\{[^}]*\\b${name}\\b[^}]*\\}`);
  return declared.test(text) || listed.test(text);
}

describe('the client-node seam (src/kube/client-node.ts, src/kube/lean/)', () => {
  const product = [...sourceFiles('src')];
  const deep = product.flatMap(deepImportsOf);

  it('only the seam imports the package’s files by path', () => {
    expect([...new Set(deep.map((d) => d.file))].sort()).to.deep.equal([...SEAM].sort());
    const seamModule = deep.filter((d) => d.file === SEAM[0]).map((d) => d.target);
    for (const target of ['config.js', 'cache.js', 'watch.js', 'middleware.js', 'patch.js'])
      expect(seamModule, target).to.include(target);
  });

  it('every file it imports is in the installed package and exports the names taken', async () => {
    expect(deep.length).to.be.greaterThan(5);
    for (const { file, target, names } of deep) {
      const where = `${file}: ${target}`;
      expect(existsSync(path.join(DIST, target)), where).to.equal(true);
      const values = names.filter((n) => !n.typeOnly);
      if (values.length > 0) {
        const mod = (await import(`${DIST_PREFIX}${target}`)) as Record<string, unknown>;
        for (const { name } of values)
          expect(mod[name], `${where} ${name}`).to.not.equal(undefined);
      }
      const dts = target.replace(/\.js$/, '.d.ts');
      for (const { name } of names)
        expect(declares(dts, name), `${where}: ${name} in ${dts}`).to.equal(true);
    }
  });

  it('every file the hooks reach into still imports what they replace, and its stand-in has every name', async () => {
    const files = Object.entries(STAND_INS);
    expect(files.length).to.be.greaterThan(0);
    for (const [file, replaced] of files) {
      expect(existsSync(path.join(DIST, file)), file).to.equal(true);
      for (const [specifier, url] of Object.entries(replaced)) {
        const names = namesImported(file, specifier);
        expect(names, `${file} imports ${specifier}`).to.not.equal(undefined);
        expect(names, `${file}: a namespace import of ${specifier}`).to.not.include('*');
        const standIn = (await import(url)) as Record<string, unknown>;
        for (const name of names ?? [])
          expect(standIn[name], `${file} takes ${name} from ${specifier}`).to.not.equal(undefined);
      }
    }
  });

  it('the installed version is in the range verified, which package.json pins', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(pkg.dependencies[PACKAGE]).to.equal(VERIFIED_CLIENT_NODE_RANGE);
    const range = /^~(\d+)\.(\d+)\.(\d+)$/.exec(VERIFIED_CLIENT_NODE_RANGE);
    expect(range, 'a tilde range: one minor version').to.not.equal(null);
    const installed = (
      JSON.parse(
        readFileSync(path.join(ROOT, 'node_modules', PACKAGE, 'package.json'), 'utf8'),
      ) as { version: string }
    ).version;
    const v = /^(\d+)\.(\d+)\.(\d+)$/.exec(installed);
    expect(v, installed).to.not.equal(null);
    const [major, minor, patch] = v!.slice(1).map(Number) as [number, number, number];
    const [wantMajor, wantMinor, leastPatch] = range!.slice(1).map(Number) as [
      number,
      number,
      number,
    ];
    expect([major, minor], `${installed} against ${VERIFIED_CLIENT_NODE_RANGE}`).to.deep.equal([
      wantMajor,
      wantMinor,
    ]);
    expect(patch).to.be.at.least(leastPatch);
  });
});
