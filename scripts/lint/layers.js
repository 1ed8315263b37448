// The project's two parts and their layers, enforced by `make lint` (the
// `layers/imports` rule below) and drawn in docs/design.md (test/layers.test.ts
// checks the drawing against the code):
//
//   harness/  the test cluster: local API server, embedded cluster, ARM
//             emulator, simulated kubelet, scheduler and workload, and the
//             development commands. It may import the product.
//   src/cli/  the product's command line: it only wires the product together.
//   src/      the product: it imports neither the CLI nor the harness, and
//             only packages the image installs (package.json dependencies).
//
// Tests and benches may import anything.
import { builtinModules, createRequire } from 'node:module';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const pkg = createRequire(import.meta.url)(path.join(ROOT, 'package.json'));
const PRODUCT_PACKAGES = new Set(Object.keys(pkg.dependencies ?? {}));

/** The part a repository path belongs to: 'harness', 'cli', 'product' or undefined (tests, benches, scripts). */
export function partOf(repoPath) {
  const p = repoPath.split(path.sep).join('/');
  if (p.startsWith('harness/')) return 'harness';
  if (p.startsWith('src/cli/')) return 'cli';
  if (p.startsWith('src/')) return 'product';
  return undefined;
}

/** What `from` (a part) may import, as the parts of the target; undefined: anything. */
const MAY_IMPORT = {
  harness: ['harness', 'cli', 'product'],
  cli: ['cli', 'product'],
  product: ['product'],
};

/** The npm package a bare specifier names: `@scope/name` or `name`. */
export function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Why `specifier`, imported by the file at `file` (absolute), breaks the
 * layers; undefined when it does not.
 */
export function layerViolation(file, specifier) {
  const from = partOf(path.relative(ROOT, file));
  if (from === undefined) return undefined;
  if (specifier.startsWith('.')) {
    const target = path.relative(ROOT, path.resolve(path.dirname(file), specifier));
    // The package's own manifest (its version): the image holds it too.
    if (target === 'package.json') return undefined;
    const to = partOf(target) ?? 'tests, benches or scripts';
    if (MAY_IMPORT[from].includes(to)) return undefined;
    return `${from} code may not import ${to} code (${target}); see scripts/lint/layers.js`;
  }
  if (from === 'harness' || specifier.startsWith('node:') || builtinModules.includes(specifier))
    return undefined;
  const name = packageOf(specifier);
  if (PRODUCT_PACKAGES.has(name)) return undefined;
  return `${from} code may only import packages the image installs: "${name}" is not in package.json dependencies`;
}

const importsRule = {
  meta: {
    type: 'problem',
    docs: {
      description: 'the product imports neither the CLI nor the harness (scripts/lint/layers.js)',
    },
    schema: [],
  },
  create(context) {
    const check = (node, source) => {
      if (!source || source.type !== 'Literal' || typeof source.value !== 'string') return;
      const why = layerViolation(context.filename, source.value);
      if (why) context.report({ node: source, message: why });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source),
      ExportNamedDeclaration: (node) => check(node, node.source),
      ExportAllDeclaration: (node) => check(node, node.source),
      ImportExpression: (node) => check(node, node.source),
    };
  },
};

export default { rules: { imports: importsRule } };
