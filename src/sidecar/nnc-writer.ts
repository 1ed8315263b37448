// The monitor's NncSpecWriter over the API server: server-side apply of the
// NNC spec as field manager `azure-cns` with force, exactly the fields the
// agent owns; an empty `ipsNotInUse` is left out, or sent as [] when the NNC
// still carries ids (docs/decisions/0012). API errors become SpecWriteError
// with the status code and Retry-After the retry policy needs.
import { PatchStrategy, setHeaderOptions } from '../kube/client-node.ts';
import { LeanCustomObjectsApi } from '../kube/lean/apis.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { apiErrorInfo } from '../kube/errors.ts';
import type { DesiredSpec, NncSpecWriter, SpecWriteResult } from '../monitor/ports.ts';
import { SpecWriteError } from '../monitor/ports.ts';
import { FIELD_MANAGER, GROUP, NNC_KIND, NNC_PLURAL, NNC_VERSION } from '../nnc/types.ts';

/**
 * The apply configuration sent for a spec. `observedIds` is `spec.ipsNotInUse`
 * as last observed, whatever it holds: anything but nothing or an empty list
 * (ids, or garbage another writer left) is taken over and cleared with [].
 */
export function applyBody(
  name: string,
  namespace: string,
  spec: DesiredSpec,
  observedIds: unknown = [],
): object {
  const observedNothing =
    observedIds === undefined ||
    observedIds === null ||
    (Array.isArray(observedIds) && observedIds.length === 0);
  const clear = spec.ipsNotInUse.length === 0 && !observedNothing;
  return {
    apiVersion: `${GROUP}/${NNC_VERSION}`,
    kind: NNC_KIND,
    metadata: { name, namespace },
    spec: {
      requestedIPCount: spec.requestedIPCount,
      ...(spec.ipsNotInUse.length > 0 || clear ? { ipsNotInUse: [...spec.ipsNotInUse] } : {}),
    },
  };
}

/** The slice of CustomObjectsApi the writer calls; tests may pass a fake. */
export interface ApplyApi {
  patchNamespacedCustomObject(
    request: {
      group: string;
      version: string;
      namespace: string;
      plural: string;
      name: string;
      body: object;
      fieldManager?: string;
      force?: boolean;
    },
    options?: unknown,
  ): Promise<unknown>;
}

export function generationOf(obj: unknown): number | undefined {
  const g = (obj as { metadata?: { generation?: unknown } } | null | undefined)?.metadata
    ?.generation;
  return typeof g === 'number' && Number.isFinite(g) ? g : undefined;
}

export function createNncWriter(opts: {
  kc?: KubeConfig;
  api?: ApplyApi;
  name: string;
  namespace: string;
  /** `spec.ipsNotInUse` of the NNC as last observed, as it is (see applyBody). */
  observedIds?: () => unknown;
  /**
   * False while the node's NNC is being deleted or gone (after it had one):
   * server-side apply would create it once it is gone, without the
   * fulfiller's owner and finalizer, so nothing is sent (the admission
   * policy refuses it too); the successor gets the spec.
   */
  present?: () => boolean;
}): NncSpecWriter {
  const api: ApplyApi =
    opts.api ??
    (opts.kc?.makeApiClient(LeanCustomObjectsApi) as ApplyApi | undefined) ??
    (() => {
      throw new Error('createNncWriter needs kc or api');
    })();
  const headers = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
  return {
    async writeSpec(spec: DesiredSpec): Promise<SpecWriteResult> {
      if (opts.present?.() === false)
        throw new SpecWriteError(
          `NodeNetworkConfig ${opts.namespace}/${opts.name} is being deleted or gone: its spec is written once the fulfiller has made it again`,
        );
      let result: unknown;
      try {
        result = await api.patchNamespacedCustomObject(
          {
            group: GROUP,
            version: NNC_VERSION,
            namespace: opts.namespace,
            plural: NNC_PLURAL,
            name: opts.name,
            body: applyBody(opts.name, opts.namespace, spec, opts.observedIds?.() ?? []),
            fieldManager: FIELD_MANAGER,
            force: true,
          },
          headers,
        );
      } catch (err) {
        const info = apiErrorInfo(err);
        throw new SpecWriteError(info.message, info.statusCode, info.retryAfterSeconds);
      }
      const generation = generationOf(result);
      return generation !== undefined ? { generation } : {};
    },
  };
}
