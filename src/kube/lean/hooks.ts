// Loads the parts of @kubernetes/client-node the node agent uses without the
// package's generated code for every API group: resolve hooks give some of its
// files a small stand-in for a module they import for a few names:
// - config.js's `./gen/index.js` (every API group and model) → gen-index.ts;
// - cache.js's `./serializer.js` (the serializer and every model) →
//   serializer.ts;
// - `undici` (the whole HTTP library), wherever the package imports it for
//   Agent, ProxyAgent or fetch → undici.ts.
// The node agent registers them before it loads anything from the client;
// the rest of client-node (KubeConfig, Watch, ListWatch, auth and
// middleware) is the package's own code, unchanged, and so are undici's
// files. The API calls are built in apis.ts. Measured in docs/decisions/0026
// (undici's in 0027). STAND_INS is the hooks' half of the client-node seam
// (src/kube/client-node.ts): test/kube/client-node-seam.test.ts fails when a
// file listed no longer imports what its stand-in replaces.
import { registerHooks } from 'node:module';

const DIST = '/@kubernetes/client-node/dist/';
const LEAN_UNDICI = new URL('./undici.ts', import.meta.url).href;
/** importing file (under dist/) → specifier it imports → stand-in. */
export const STAND_INS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'config.js': {
    './gen/index.js': new URL('./gen-index.ts', import.meta.url).href,
    undici: LEAN_UNDICI,
  },
  'cache.js': { './serializer.js': new URL('./serializer.ts', import.meta.url).href },
  'watch.js': { undici: LEAN_UNDICI },
  'gen/http/isomorphic-fetch.js': { undici: LEAN_UNDICI },
  'health.js': { undici: LEAN_UNDICI },
  'log.js': { undici: LEAN_UNDICI },
  'metrics.js': { undici: LEAN_UNDICI },
};

/** The stand-in for `specifier` imported from `parentURL`, if there is one. */
export function standIn(specifier: string, parentURL: string | undefined): string | undefined {
  const at = parentURL?.lastIndexOf(DIST) ?? -1;
  if (parentURL === undefined || at < 0) return undefined;
  return STAND_INS[parentURL.slice(at + DIST.length)]?.[specifier];
}

let registered = false;

/** Registers the hook once per process; later calls do nothing. */
export function useLeanKubeClient(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    resolve(specifier, context, next) {
      const url = standIn(specifier, context.parentURL);
      if (url !== undefined) return { url, shortCircuit: true };
      return next(specifier, context);
    },
  });
}
