// What @kubernetes/client-node's config.js takes from its generated index
// (`./gen/index.js`), and nothing else: the index re-exports every API group
// and model (about 16 MB of source), of which a KubeConfig needs two names.
// hooks.ts points config.js here in the node agent (docs/decisions/0026).
// The seam's one import of the package's files outside src/kube/client-node.ts:
// that module loads config.js, the very file this one stands in for.
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';
