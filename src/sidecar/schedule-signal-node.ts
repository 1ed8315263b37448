// The schedule signal's one effect: the node's own taint on its Node, read
// with a GET of that Node and written with a JSON patch of `spec.taints`
// that tests the taints as read (or the resourceVersion when there were
// none), so another writer's taints are never clobbered: when the Node
// changed meanwhile the patch fails (422), the Node is read again and the
// patch made again. What the patch answers is the Node as it now is.
// Retries of other failures are the loop's (schedule-signal-run.ts).
import type { Configuration, ConfigurationOptions, KubeConfig } from '@kubernetes/client-node';
import { apiErrorInfo } from '../kube/errors.ts';
import { callApi, HttpMethod, segment } from '../kube/lean/request.ts';
import {
  ourTaint,
  taintPatch,
  taintsWith,
  type SignalReason,
  type Taint,
} from './schedule-signal.ts';

export interface NodeLike {
  metadata?: { name?: string; resourceVersion?: string };
  spec?: { taints?: Taint[] | null } | null;
}

/** The two Node calls, as client-node names them; tests may pass a fake. */
export interface NodeCalls {
  readNode(p: { name: string }): Promise<NodeLike>;
  patchNode(p: { name: string; body: object }): Promise<NodeLike>;
}

/** GET and JSON-patch of one Node, without client-node's models (as src/kube/lean/). */
export class LeanNodeApi implements NodeCalls {
  private readonly configuration: Configuration;
  private readonly options: ConfigurationOptions | undefined;
  constructor(configuration: Configuration) {
    this.configuration = configuration;
    this.options = undefined;
  }
  readNode(p: { name: string }): Promise<NodeLike> {
    return callApi(this.configuration, this.options, {
      method: HttpMethod.GET,
      path: `/api/v1/nodes/${segment(p.name)}`,
    });
  }
  patchNode(p: { name: string; body: object }): Promise<NodeLike> {
    return callApi(this.configuration, this.options, {
      method: HttpMethod.PATCH,
      path: `/api/v1/nodes/${segment(p.name)}`,
      body: p.body,
      contentType: 'application/json-patch+json',
    });
  }
}

/** The node's taint as the loop sees it. */
export interface NodeTaints {
  /** Our taint on the Node now (undefined: not there). */
  read(): Promise<Taint | undefined>;
  /** Sets our taint with this reason, or removes it; resolves with our taint as it now is. */
  write(reason: SignalReason | undefined): Promise<Taint | undefined>;
}

/** Conflicts in a row before a write gives up (the loop retries it later). */
const CONFLICT_TRIES = 3;

export function nodeTaints(opts: { kc?: KubeConfig; api?: NodeCalls; name: string }): NodeTaints {
  const api: NodeCalls =
    opts.api ??
    (opts.kc?.makeApiClient(LeanNodeApi) as NodeCalls | undefined) ??
    (() => {
      throw new Error('nodeTaints needs kc or api');
    })();
  const name = opts.name;
  let last: NodeLike | undefined;
  const read = async (): Promise<NodeLike> => {
    last = await api.readNode({ name });
    return last;
  };
  return {
    async read() {
      return ourTaint((await read()).spec?.taints);
    },
    async write(reason) {
      for (let attempt = 1; ; attempt += 1) {
        const node = last ?? (await read());
        const current = ourTaint(node.spec?.taints);
        const same =
          reason === undefined
            ? current === undefined
            : current?.value === reason && current.effect === 'NoSchedule';
        if (same) return current;
        try {
          last = await api.patchNode({
            name,
            body: taintPatch(node, taintsWith(node.spec?.taints, reason)),
          });
          return ourTaint(last.spec?.taints);
        } catch (err) {
          const code = apiErrorInfo(err).statusCode;
          last = undefined;
          // The Node changed since it was read (the test failed): read it again.
          if ((code === 422 || code === 409) && attempt < CONFLICT_TRIES) continue;
          throw err;
        }
      }
    },
  };
}

/** A Node that is never read or written (--dry-run): the signal as if written. */
export function dryRunNodeTaints(): NodeTaints {
  let taint: Taint | undefined;
  return {
    read: () => Promise.resolve(taint),
    write(reason) {
      taint =
        reason === undefined ? undefined : { key: 'dry-run', value: reason, effect: 'NoSchedule' };
      return Promise.resolve(taint);
    },
  };
}
