// The seam between the product and @kubernetes/client-node's own files. What
// the product takes from a path inside the package (`dist/...`) rather than
// from its index is imported here, and only here, each with why; the product
// imports these names from this module (types, and what the fulfiller uses
// whole, still come from the index). The seam's other half is src/kube/lean/:
// the stand-ins the node agent's resolve hooks give some of the package's
// files (hooks.ts, STAND_INS), registered before this module loads.
//
// Why paths inside the package at all: its index loads every API group and
// model, most of the node agent's memory when it alone was imported, and the
// agent runs on every node. Taking each class from its own file, with the
// stand-ins, it loads a few dozen of the package's modules instead of all
// (docs/decisions/0026); its one bundled file applies the same stand-ins as
// it is built instead of at run time (docs/decisions/0027).
//
// Verified against the version range below, which package.json pins as a
// tilde range: npm never moves to the next minor by itself, whose files,
// names or imports may differ. test/kube/client-node-seam.test.ts fails when
// the installed package no longer has a file or name imported here, when a
// file the hooks reach into no longer imports what they replace, or when
// package.json and this range part. To upgrade: raise both, run that test
// and test/kube/lean.process.test.ts.
export const VERIFIED_CLIENT_NODE_RANGE = '~2.0.1';

// KubeConfig alone: config.js imports the generated index (`./gen/index.js`)
// for two names, which the agent's hook gives it from lean/gen-index.ts.
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
// ListWatch alone: cache.js's serializer import gets lean/serializer.ts.
export { ListWatch } from '@kubernetes/client-node/dist/cache.js';
// Watch alone: src/kube/watch.ts subclasses it (bookmarks, timeoutSeconds).
export { Watch } from '@kubernetes/client-node/dist/watch.js';
// The NNC writer's apply: a Content-Type header option and the patch types,
// each from its own small file rather than through the index.
export { setHeaderOptions } from '@kubernetes/client-node/dist/middleware.js';
export { PatchStrategy } from '@kubernetes/client-node/dist/patch.js';
// The agent's five calls are built by lean/request.ts from the package's own
// plumbing (its configuration, request context, errors), not its generated
// request factories, which load the serializer and every model (0026).
export { RequiredError } from '@kubernetes/client-node/dist/gen/apis/baseapi.js';
export { ApiException } from '@kubernetes/client-node/dist/gen/apis/exception.js';
export { mergeConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export {
  HttpMethod,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node/dist/gen/http/http.js';
// Types only (nothing loads): the parameters of the package's calls, which
// lean/apis.ts takes as they are, so its calls keep the package's names.
export type {
  CoreV1ApiCreateNamespacedEventRequest,
  CoreV1ApiListPodForAllNamespacesRequest,
  CoreV1ApiReplaceNamespacedEventRequest,
  CustomObjectsApiListNamespacedCustomObjectRequest,
  CustomObjectsApiPatchNamespacedCustomObjectRequest,
} from '@kubernetes/client-node/dist/gen/types/ObjectParamAPI.js';
