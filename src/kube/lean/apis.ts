// The few Kubernetes API calls the node agent makes, each built from
// @kubernetes/client-node's own generated request factory and response
// processor for its API group, without the package's Promise/Observable
// wrappers of every group (two files of 8 MB source between them). Each call
// does what the package's ObjectParamAPI → ObservableAPI chain does: merge
// the per-call options, build the request, run the middleware (the
// user-agent header, setHeaderOptions), send, run the middleware back,
// process the response (typed models, ApiException on an error status).
// Made with kc.makeApiClient(LeanCoreV1Api) like the package's classes.
import type { Configuration, ConfigurationOptions } from '@kubernetes/client-node';
import { mergeConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
import {
  CoreV1ApiRequestFactory,
  CoreV1ApiResponseProcessor,
} from '@kubernetes/client-node/dist/gen/apis/CoreV1Api.js';
import {
  CustomObjectsApiRequestFactory,
  CustomObjectsApiResponseProcessor,
} from '@kubernetes/client-node/dist/gen/apis/CustomObjectsApi.js';
import type {
  CoreV1ApiCreateNamespacedEventRequest,
  CoreV1ApiListPodForAllNamespacesRequest,
  CoreV1ApiReplaceNamespacedEventRequest,
  CustomObjectsApiListNamespacedCustomObjectRequest,
  CustomObjectsApiPatchNamespacedCustomObjectRequest,
} from '@kubernetes/client-node/dist/gen/types/ObjectParamAPI.js';
import type {
  RequestContext,
  ResponseContext,
} from '@kubernetes/client-node/dist/gen/http/http.js';
import type { CoreV1Event, V1PodList } from '@kubernetes/client-node';

/** One call: request → middleware → send → middleware back → typed data. */
async function call<T>(
  configuration: Configuration,
  options: ConfigurationOptions | undefined,
  request: (config: Configuration) => Promise<RequestContext>,
  response: (rsp: ResponseContext) => Promise<{ data: T }>,
): Promise<T> {
  const config = mergeConfiguration(configuration, options);
  let ctx = await request(config);
  for (const m of config.middleware) ctx = await m.pre(ctx).toPromise();
  let rsp = await config.httpApi.send(ctx).toPromise();
  for (const m of [...config.middleware].reverse()) rsp = await m.post(rsp).toPromise();
  return (await response(rsp)).data;
}

export class LeanCoreV1Api {
  private readonly configuration: Configuration;
  private readonly factory: CoreV1ApiRequestFactory;
  private readonly processor = new CoreV1ApiResponseProcessor();
  constructor(configuration: Configuration) {
    this.configuration = configuration;
    this.factory = new CoreV1ApiRequestFactory(configuration);
  }

  listPodForAllNamespaces(
    p: CoreV1ApiListPodForAllNamespacesRequest = {},
    options?: ConfigurationOptions,
  ): Promise<V1PodList> {
    return call(
      this.configuration,
      options,
      (c) =>
        this.factory.listPodForAllNamespaces(
          p.allowWatchBookmarks,
          p._continue,
          p.fieldSelector,
          p.labelSelector,
          p.limit,
          p.pretty,
          p.resourceVersion,
          p.resourceVersionMatch,
          p.sendInitialEvents,
          p.shardSelector,
          p.timeoutSeconds,
          p.watch,
          c,
        ),
      (r) => this.processor.listPodForAllNamespacesWithHttpInfo(r),
    );
  }

  createNamespacedEvent(
    p: CoreV1ApiCreateNamespacedEventRequest,
    options?: ConfigurationOptions,
  ): Promise<CoreV1Event> {
    return call(
      this.configuration,
      options,
      (c) =>
        this.factory.createNamespacedEvent(
          p.namespace,
          p.body,
          p.pretty,
          p.dryRun,
          p.fieldManager,
          p.fieldValidation,
          c,
        ),
      (r) => this.processor.createNamespacedEventWithHttpInfo(r),
    );
  }

  replaceNamespacedEvent(
    p: CoreV1ApiReplaceNamespacedEventRequest,
    options?: ConfigurationOptions,
  ): Promise<CoreV1Event> {
    return call(
      this.configuration,
      options,
      (c) =>
        this.factory.replaceNamespacedEvent(
          p.name,
          p.namespace,
          p.body,
          p.pretty,
          p.dryRun,
          p.fieldManager,
          p.fieldValidation,
          c,
        ),
      (r) => this.processor.replaceNamespacedEventWithHttpInfo(r),
    );
  }
}

export class LeanCustomObjectsApi {
  private readonly configuration: Configuration;
  private readonly factory: CustomObjectsApiRequestFactory;
  private readonly processor = new CustomObjectsApiResponseProcessor();
  constructor(configuration: Configuration) {
    this.configuration = configuration;
    this.factory = new CustomObjectsApiRequestFactory(configuration);
  }

  listNamespacedCustomObject(
    p: CustomObjectsApiListNamespacedCustomObjectRequest,
    options?: ConfigurationOptions,
  ): Promise<unknown> {
    return call(
      this.configuration,
      options,
      (c) =>
        this.factory.listNamespacedCustomObject(
          p.group,
          p.version,
          p.namespace,
          p.plural,
          p.pretty,
          p.allowWatchBookmarks,
          p._continue,
          p.fieldSelector,
          p.labelSelector,
          p.limit,
          p.resourceVersion,
          p.resourceVersionMatch,
          p.timeoutSeconds,
          p.watch,
          c,
        ),
      (r) => this.processor.listNamespacedCustomObjectWithHttpInfo(r),
    );
  }

  patchNamespacedCustomObject(
    p: CustomObjectsApiPatchNamespacedCustomObjectRequest,
    options?: ConfigurationOptions,
  ): Promise<unknown> {
    return call(
      this.configuration,
      options,
      (c) =>
        this.factory.patchNamespacedCustomObject(
          p.group,
          p.version,
          p.namespace,
          p.plural,
          p.name,
          p.body,
          p.dryRun,
          p.fieldManager,
          p.fieldValidation,
          p.force,
          c,
        ),
      (r) => this.processor.patchNamespacedCustomObjectWithHttpInfo(r),
    );
  }
}
