// Node deletions under chaos: a node's Node object is deleted through the
// API (as `kubectl delete node` during an outage) while its simulated
// kubelet and its sidecar keep running; the API server's garbage collector
// then deletes its NNC (ownerReference), which the fulfiller's finalizer
// keeps terminating (docs/decisions/0030). After `downMs` the node's kubelet
// registers it again, as a live kubelet's node status loop does when it
// finds its Node gone: the same labels, providerID and Ready status, a new
// uid. Every call goes through the API server with the admin's token, so
// the write faults apply to it too: each is retried until it lands (a 404 on
// a delete, or a 409 AlreadyExists on a create, after a lost answer means
// it did).
//
// The sidecar's token is bound to its Node (harness/embedded/access.ts), so
// from the deletion on it is refused (401, the token's Node is gone or has
// another uid). A kubelet would rotate a pod's projected token; here, once
// the Node is back, the sidecar gets a token bound to the new Node in its
// kubeconfig and is killed (-9) and started again on it. The 401s between
// the first deletion and the last such restart are counted apart
// (`unauthenticatedWhileNodesDeleted`): they are the harness's, not the
// product's.
import { KubeConfig } from '@kubernetes/client-node';
import type { ApiServer } from '../../apiserver/server.ts';
import type { Logger } from '../../../src/log/logger.ts';
import { errorText } from '../../../src/log/error-text.ts';
import { writePrivateFile } from '../../../src/secrets/private-file.ts';
import { kubeConfigWithToken } from '../access.ts';
import { httpJsonCalls, type HttpJsonCalls } from '../http-pod-api.ts';
import { embeddedNodeStatus } from '../node-objects.ts';
import type { KObject } from '../../../src/kube/json-object.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** The service account a token names (its `kubernetes.io` claim). */
function serviceAccountOf(token: string): { namespace: string; name: string } {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
    'kubernetes.io'?: { namespace?: string; serviceaccount?: { name?: string } };
  };
  const k = payload['kubernetes.io'];
  if (!k?.namespace || !k.serviceaccount?.name) throw new Error('not a service-account token');
  return { namespace: k.namespace, name: k.serviceaccount.name };
}

export interface NodeDeletionsOptions {
  server: ApiServer;
  logger: Logger;
  /** The sidecar's kubeconfig file for a node. */
  sidecarKubeconfig(node: string): string | undefined;
  /** Kills the node's sidecar (-9) and starts it again (on its rewritten kubeconfig). */
  restartSidecar(node: string): Promise<void>;
}

export class NodeDeletions {
  deletions = 0;
  reregistrations = 0;
  /** Deletions made while no fulfiller replica ran. */
  whileNoFulfiller = 0;
  /** Nodes whose delete has not yet been followed by their re-registration. */
  private open = 0;
  private unauthenticatedBase = 0;
  private unauthenticatedCounted = 0;
  private readonly o: NodeDeletionsOptions;
  private readonly api: HttpJsonCalls;
  private readonly log: Logger;

  constructor(options: NodeDeletionsOptions) {
    this.o = options;
    const kc = new KubeConfig();
    kc.loadFromFile(options.server.kubeconfigPath);
    this.api = httpJsonCalls(kc, 4);
    this.log = options.logger.child({ component: 'chaos' });
  }

  /** 401s while a Node was deleted or its sidecar still had the old Node's token. */
  unauthenticatedWhileNodesDeleted(): number {
    const now = this.o.server.authorizations().unauthenticated;
    return this.unauthenticatedCounted + (this.open > 0 ? now - this.unauthenticatedBase : 0);
  }

  close(): void {
    this.api.close();
  }

  /** One write, retried until it lands; `done` says which errors mean it did. */
  private async write(
    what: string,
    call: () => Promise<unknown>,
    done: (code?: number) => boolean,
  ) {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await call();
        return;
      } catch (err) {
        if (done(statusCodeOf(err))) return;
        if (attempt % 10 === 0)
          this.log.warn('chaos: node write retry', { what, attempt, error: errorText(err) });
        await sleep(200);
      }
    }
  }

  /**
   * Deletes `node`'s Node, waits `downMs`, registers it again, and restarts
   * its sidecar on a token bound to the new Node. `noFulfiller` says whether
   * no fulfiller runs (asked at the deletion); `afterDelete` is called once
   * the Node is deleted.
   */
  async run(
    node: string,
    index: number,
    downMs: number,
    hooks: { noFulfiller: () => boolean; afterDelete: () => void },
  ): Promise<void> {
    const old = this.o.server.objects('', 'nodes').find((n) => n.metadata.name === node) as
      (KObject & { spec?: { providerID?: string } }) | undefined;
    if (!old) return;
    const labels = (old.metadata.labels ?? {}) as Record<string, string>;
    const providerID = old.spec?.providerID;
    if (this.open === 0) this.unauthenticatedBase = this.o.server.authorizations().unauthenticated;
    this.open += 1;
    try {
      const path = `/api/v1/nodes/${encodeURIComponent(node)}`;
      const down = hooks.noFulfiller();
      await this.write(
        `delete node ${node}`,
        () => this.api.call('DELETE', path),
        (code) => code === 404,
      );
      this.deletions += 1;
      if (down) this.whileNoFulfiller += 1;
      this.log.info('chaos: node deleted', { node, downMs, noFulfiller: down });
      hooks.afterDelete();
      await sleep(downMs);
      // The kubelet's node status loop finds its Node gone and registers it
      // again. A 409 means the name is taken: by this create, whose answer
      // was lost, or by the old Node still terminating (a finalizer holds
      // it, as the fulfiller's addresses finalizer may): then it waits.
      await this.write(
        `register node ${node}`,
        () =>
          this.api.call('POST', '/api/v1/nodes', {
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name: node, labels },
            ...(providerID ? { spec: { providerID } } : {}),
          }),
        (code) => code === 409 && this.heldByAnother(node, old.metadata.uid as string | undefined),
      );
      const address =
        (
          (old.status as { addresses?: { type?: string; address?: string }[] } | undefined)
            ?.addresses ?? []
        ).find((a) => a.type === 'InternalIP')?.address ?? '';
      await this.write(
        `node ${node} status`,
        () =>
          this.api.call(
            'PATCH',
            `${path}/status`,
            { status: embeddedNodeStatus(node, address, new Date()) },
            'application/merge-patch+json',
          ),
        () => false,
      );
      this.reregistrations += 1;
      this.log.info('chaos: node registered again', { node, index });
      await this.rotateSidecarToken(node);
    } finally {
      this.open -= 1;
      if (this.open === 0)
        this.unauthenticatedCounted +=
          this.o.server.authorizations().unauthenticated - this.unauthenticatedBase;
    }
  }

  /** Whether the Node named `node` now is another than the one of `uid` (read without faults). */
  private heldByAnother(node: string, uid: string | undefined): boolean {
    const now = this.o.server.objects('', 'nodes').find((n) => n.metadata.name === node);
    return now !== undefined && now.metadata.uid !== uid;
  }

  /** A token bound to the new Node in the sidecar's kubeconfig, then the sidecar restarted on it. */
  private async rotateSidecarToken(node: string): Promise<void> {
    const file = this.o.sidecarKubeconfig(node);
    if (!file) return;
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    const user = kc.getCurrentUser();
    const sa = serviceAccountOf(user?.token ?? '');
    let token = '';
    await this.write(
      `token for ${node}`,
      async () => {
        const answer = await this.api.call(
          'POST',
          `/api/v1/namespaces/${encodeURIComponent(sa.namespace)}/serviceaccounts/${encodeURIComponent(sa.name)}/token`,
          {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: {
              audiences: [],
              expirationSeconds: 3600,
              boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: node },
            },
          },
        );
        token = (JSON.parse(answer) as { status?: { token?: string } }).status?.token ?? '';
        if (!token) throw new Error('no token in the TokenRequest answer');
      },
      () => false,
    );
    writePrivateFile(
      file,
      kubeConfigWithToken(kc, token, user?.name ?? `sidecar-${node}`).exportConfig(),
    );
    await this.o.restartSidecar(node);
  }
}
