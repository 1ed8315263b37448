// Loads @kubernetes/client-node's KubeConfig without its generated index of
// every API group: one resolve hook sends config.js's `./gen/index.js` to
// gen-index.ts (the two names it uses). The node agent registers it before it
// loads anything from the client; the rest of client-node (Watch, ListWatch,
// the request factories of the APIs it calls, the serializer) is the
// package's own code, unchanged. Measured in docs/decisions/0026.
import { registerHooks } from 'node:module';

const CONFIG = '/@kubernetes/client-node/dist/config.js';
const LEAN_INDEX = new URL('./gen-index.ts', import.meta.url).href;

let registered = false;

/** Registers the hook once per process; later calls do nothing. */
export function useLeanKubeClient(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    resolve(specifier, context, next) {
      if (specifier === './gen/index.js' && context.parentURL?.endsWith(CONFIG)) {
        return { url: LEAN_INDEX, format: 'module', shortCircuit: true };
      }
      return next(specifier, context);
    },
  });
}
