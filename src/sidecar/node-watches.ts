// The sidecar's inputs: the watches of the node's pods, its NNC and the
// ClusterSubnetStates (informers.ts). Built with the sidecar, started only
// once the node API listens (run.ts), so nothing talks to the API server
// before the node API has bound; they keep the last error a watch reported,
// one of the things readiness is derived from (waiting.ts).
import type { KubeConfig } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Logger } from '../log/logger.ts';
import { startNodeInformers, type NodeInformers } from './informers.ts';
import type { SidecarOptions } from './options.ts';

/** The node's watches: nothing is watched before start(). */
export class NodeWatches {
  readonly #options: SidecarOptions;
  readonly #kc: KubeConfig;
  readonly #root: Logger;
  readonly #backoff: BackoffOptions | undefined;
  #informers: NodeInformers | undefined;
  #lastError: string | undefined;
  #errors: Subscription[] = [];

  constructor(input: {
    options: SidecarOptions;
    kc: KubeConfig;
    root: Logger;
    backoff?: BackoffOptions | undefined;
  }) {
    this.#options = input.options;
    this.#kc = input.kc;
    this.#root = input.root;
    this.#backoff = input.backoff;
  }

  /** The informers once started; undefined while the sidecar starts. */
  get informers(): NodeInformers | undefined {
    return this.#informers;
  }

  /** The last error a watch reported (its list failed, or its watch). */
  lastError(): string | undefined {
    return this.#lastError;
  }

  start(): NodeInformers {
    if (this.#informers) throw new Error('the node watches already started');
    const options = this.#options;
    const informers = startNodeInformers({
      kc: this.#kc,
      nodeName: options.nodeName,
      namespace: options.namespace,
      subnetState: options.subnetState,
      logger: this.#root,
      ...(this.#backoff ? { backoff: this.#backoff } : {}),
    });
    this.#informers = informers;
    this.#errors = [informers.pods, informers.nnc, informers.css].map((w) =>
      w.events$.subscribe((e) => {
        if (e.type === 'error') this.#lastError = e.info.message;
      }),
    );
    return informers;
  }

  async stop(): Promise<void> {
    await this.#informers?.stop();
    for (const s of this.#errors) s.unsubscribe();
  }
}
