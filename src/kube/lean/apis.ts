// The five Kubernetes API calls the node agent makes, with the same names,
// parameters and requests as @kubernetes/client-node's CoreV1Api and
// CustomObjectsApi, built by request.ts instead of the package's generated
// request factories (which load its serializer and every model). Answers are
// the server's JSON (see request.ts). Made with kc.makeApiClient(LeanCoreV1Api)
// like the package's classes.
import type { Configuration, ConfigurationOptions } from '@kubernetes/client-node';
import type {
  CoreV1ApiCreateNamespacedEventRequest,
  CoreV1ApiListPodForAllNamespacesRequest,
  CoreV1ApiReplaceNamespacedEventRequest,
  CustomObjectsApiListNamespacedCustomObjectRequest,
  CustomObjectsApiPatchNamespacedCustomObjectRequest,
} from '../client-node.ts';
import type { CoreV1Event, V1PodList } from '@kubernetes/client-node';
import { callApi, HttpMethod, required, segment } from './request.ts';

/** What a create or replace sends besides the body, as the package names it. */
type WriteQuery = Pick<
  CoreV1ApiCreateNamespacedEventRequest,
  'pretty' | 'dryRun' | 'fieldManager' | 'fieldValidation'
>;
const writeQuery = (p: WriteQuery): Record<string, string | undefined> => ({
  pretty: p.pretty,
  dryRun: p.dryRun,
  fieldManager: p.fieldManager,
  fieldValidation: p.fieldValidation,
});

export class LeanCoreV1Api {
  private readonly configuration: Configuration;
  constructor(configuration: Configuration) {
    this.configuration = configuration;
  }

  listPodForAllNamespaces(
    p: CoreV1ApiListPodForAllNamespacesRequest = {},
    options?: ConfigurationOptions,
  ): Promise<V1PodList> {
    return callApi(this.configuration, options, {
      method: HttpMethod.GET,
      path: '/api/v1/pods',
      query: {
        allowWatchBookmarks: p.allowWatchBookmarks,
        continue: p._continue,
        fieldSelector: p.fieldSelector,
        labelSelector: p.labelSelector,
        limit: p.limit,
        pretty: p.pretty,
        resourceVersion: p.resourceVersion,
        resourceVersionMatch: p.resourceVersionMatch,
        sendInitialEvents: p.sendInitialEvents,
        shardSelector: p.shardSelector,
        timeoutSeconds: p.timeoutSeconds,
        watch: p.watch,
      },
    });
  }

  createNamespacedEvent(
    p: CoreV1ApiCreateNamespacedEventRequest,
    options?: ConfigurationOptions,
  ): Promise<CoreV1Event> {
    const api = 'CoreV1Api';
    const method = 'createNamespacedEvent';
    const namespace = required(api, method, 'namespace', p.namespace);
    return callApi(this.configuration, options, {
      method: HttpMethod.POST,
      path: `/api/v1/namespaces/${segment(namespace)}/events`,
      query: writeQuery(p),
      body: required(api, method, 'body', p.body),
    });
  }

  replaceNamespacedEvent(
    p: CoreV1ApiReplaceNamespacedEventRequest,
    options?: ConfigurationOptions,
  ): Promise<CoreV1Event> {
    const api = 'CoreV1Api';
    const method = 'replaceNamespacedEvent';
    const name = required(api, method, 'name', p.name);
    const namespace = required(api, method, 'namespace', p.namespace);
    return callApi(this.configuration, options, {
      method: HttpMethod.PUT,
      path: `/api/v1/namespaces/${segment(namespace)}/events/${segment(name)}`,
      query: writeQuery(p),
      body: required(api, method, 'body', p.body),
    });
  }
}

/** `/apis/{group}/{version}/namespaces/{namespace}/{plural}`, each part required. */
function collectionPath(
  method: string,
  p: { group: string; version: string; namespace: string; plural: string },
): string {
  const part = (field: 'group' | 'version' | 'namespace' | 'plural'): string =>
    segment(required('CustomObjectsApi', method, field, p[field]));
  return `/apis/${part('group')}/${part('version')}/namespaces/${part('namespace')}/${part('plural')}`;
}

export class LeanCustomObjectsApi {
  private readonly configuration: Configuration;
  constructor(configuration: Configuration) {
    this.configuration = configuration;
  }

  listNamespacedCustomObject(
    p: CustomObjectsApiListNamespacedCustomObjectRequest,
    options?: ConfigurationOptions,
  ): Promise<unknown> {
    return callApi(this.configuration, options, {
      method: HttpMethod.GET,
      path: collectionPath('listNamespacedCustomObject', p),
      query: {
        pretty: p.pretty,
        allowWatchBookmarks: p.allowWatchBookmarks,
        continue: p._continue,
        fieldSelector: p.fieldSelector,
        labelSelector: p.labelSelector,
        limit: p.limit,
        resourceVersion: p.resourceVersion,
        resourceVersionMatch: p.resourceVersionMatch,
        timeoutSeconds: p.timeoutSeconds,
        watch: p.watch,
      },
    });
  }

  /**
   * Sent as application/json-patch+json, the package's default for this call;
   * pass setHeaderOptions('Content-Type', ...) for another patch type.
   */
  patchNamespacedCustomObject(
    p: CustomObjectsApiPatchNamespacedCustomObjectRequest,
    options?: ConfigurationOptions,
  ): Promise<unknown> {
    const method = 'patchNamespacedCustomObject';
    const path = collectionPath(method, p);
    const name = required('CustomObjectsApi', method, 'name', p.name);
    return callApi(this.configuration, options, {
      method: HttpMethod.PATCH,
      path: `${path}/${segment(name)}`,
      query: {
        dryRun: p.dryRun,
        fieldManager: p.fieldManager,
        fieldValidation: p.fieldValidation,
        force: p.force,
      },
      body: required('CustomObjectsApi', method, 'body', p.body),
      contentType: 'application/json-patch+json',
    });
  }
}
