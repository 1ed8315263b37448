// Builds dist/sidecar.js: the node agent (src/cli/sidecar-main.ts) and all it
// loads, the product's modules and their libraries, as one ES module
// (docs/decisions/0027). bin/pool-monitor runs the sidecar from it while it is
// newer than every source. The client's two stand-ins (src/kube/lean/hooks.ts)
// are applied here as the bundle is made, instead of as resolve hooks at run
// time. `node scripts/bundle-sidecar.ts [outfile]`; `make bundle`.
import { build, type Metafile, type Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { standIn } from '../src/kube/lean/hooks.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_OUTFILE = `${ROOT}dist/sidecar.js`;

/** client-node's files get their stand-ins, as the resolve hooks give them. */
const leanKubeClient: Plugin = {
  name: 'lean-kube-client',
  setup(b) {
    b.onResolve({ filter: /^(\.\/|undici$)/ }, (args) => {
      const url = standIn(args.path, pathToFileURL(args.importer).href);
      return url === undefined ? undefined : { path: fileURLToPath(url) };
    });
  },
};

/**
 * Node's built-in modules taken through require(), as CommonJS code takes
 * them, wherever the sources import them. An ES import of a built-in reads
 * every one of its exports to build the namespace, running their lazy
 * getters: importing node:http that way loads Node's own copy of undici for
 * its WebSocket (72 more built-in modules), node:fs its promises API (31).
 */
const builtinsByRequire: Plugin = {
  name: 'builtins-by-require',
  setup(b) {
    b.onResolve({ filter: /^[a-z_:/]+$/ }, (args) =>
      args.kind === 'import-statement' && isBuiltin(args.path)
        ? { path: args.path, namespace: 'builtin-by-require' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'builtin-by-require' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/** Writes the bundle to `outfile`; what went into it. */
export async function bundleSidecar(outfile = DEFAULT_OUTFILE): Promise<Metafile> {
  const result = await build({
    // Paths in the bundle and its metafile relative to the repository, wherever it is run from.
    absWorkingDir: ROOT,
    entryPoints: [`${ROOT}src/cli/sidecar-main.ts`],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    // Whitespace and syntax only: names stay, so stack traces in the logs
    // still name the functions (docs/decisions/0027 measured the difference).
    minifyWhitespace: true,
    minifySyntax: true,
    // dist/sidecar.js.map: read only under --enable-source-maps (stack traces
    // in the sources' lines). `make coverage` runs the sidecar's sources.
    sourcemap: 'linked',
    // The libraries' license comments go to dist/sidecar.js.LEGAL.txt: one
    // of them holds a non-ASCII letter, and a source with a single one is held
    // by Node as two bytes a character (3.6 MB instead of 1.8). esbuild
    // escapes non-ASCII in the code itself (charset ascii, its default).
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
    plugins: [leanKubeClient, builtinsByRequire],
    // The libraries written as CommonJS call require() for Node's built-ins.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  const at = firstNonAscii(readFileSync(outfile));
  if (at >= 0)
    throw new Error(`${outfile}: a non-ASCII byte at offset ${at}; the bundle must be ASCII`);
  return result.metafile;
}

/** Offset of the first byte over 0x7f, or -1: Node keeps an ASCII source at one byte a character. */
export function firstNonAscii(bytes: Uint8Array): number {
  return bytes.findIndex((b) => b > 0x7f);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outfile = process.argv[2] ?? DEFAULT_OUTFILE;
  const meta = await bundleSidecar(outfile);
  const js = Object.entries(meta.outputs).find(([file]) => file.endsWith('.js'));
  console.log(
    `${outfile}: ${((js?.[1].bytes ?? 0) / 1024).toFixed(0)} KiB from ${Object.keys(meta.inputs).length} files`,
  );
}
