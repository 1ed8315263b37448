// The node API's endpoints (server.ts serves them): the probes, metrics, the
// pool debug view and the CNS IPAM calls, each a handler from a request to a
// reply. A JSON body is read and validated before anything touches the
// store; a refusal is a 4xx with a CNS ReturnCode.
import type { IncomingMessage } from 'node:http';
import type { IpRecord, NodeIpStore } from '../ipstore/types.ts';
import type { Logger } from '../log/logger.ts';
import { DEFAULT_BODY_LIMIT, readJsonBody } from './body.ts';
import { PATHS, ReturnCode } from './cns.ts';
import type { ErrorBody } from './cns.ts';
import {
  addressesOf,
  listAttachments,
  listIpAddresses,
  lookupIpConfig,
  notYet,
  releaseIpConfigs,
  requestIpConfigs,
} from './ipam.ts';
import type { IpamChange, Outcome } from './ipam.ts';
import {
  parseAttachmentsQuery,
  parseInterfaceLookup,
  parseIpConfigsRequest,
  parseStateFilter,
} from './validate.ts';
import type { IpConfigsRequest, Parsed } from './validate.ts';

export interface HealthSource {
  /** False once the process cannot do its job (GET /healthz answers 503). */
  healthy(): boolean;
  /** True once the first valid NNC arrived and the store is loaded. */
  ready(): boolean;
  /** While not ready: what it waits for, said in /readyz's body. */
  notReadyReason?(): string | undefined;
}

export interface PoolStatusSource {
  /** The `/debug/pool` document (see buildDebugPool). */
  debugPool(): unknown;
}

/** The part of MetricsCollector the API uses. */
export interface NodeApiMetrics {
  readonly contentType: string;
  render(): Promise<string>;
  observeHttp(method: string, route: string, code: number, seconds: number): void;
}

export interface NodeApiDeps {
  store: NodeIpStore;
  health: HealthSource;
  pool: PoolStatusSource;
  metrics: NodeApiMetrics;
  logger: Logger;
  /** Told about every assignment and every release that freed an IP. Must not throw. */
  onChange?: (change: IpamChange) => void;
  /** A request refused for want of a free IP (ReturnCode 32 from the store). */
  onNoIp?: (request: { podNamespace: string; podName: string }) => void;
  /**
   * Why no IP may be handed out yet (the store does not follow the pods
   * yet), or undefined. While it says why, requests are answered with
   * ReturnCode 32 and the CNI retries; releases go on.
   */
  assignGate?: () => string | undefined;
  /**
   * A release that named no assignment the store knows: the sidecar may
   * release what it adopted for that pod (see PodFollower.releaseAdopted).
   * Returns the records released (as they were). Must not throw.
   */
  onUnmatchedRelease?: (request: IpConfigsRequest) => IpRecord[];
  /** Largest accepted request body in bytes; default 64 KiB. */
  maxBodyBytes?: number;
  /** How long close() waits for in-flight requests before cutting them; default 5 s. */
  closeGraceMs?: number;
  /** Monotonic clock in ms for request timing; default performance.now. */
  now?: () => number;
  /**
   * The node API token (--node-api-token-file), read anew on each call; when
   * it gives one, the IPAM and pod-identity endpoints need it (auth.ts).
   */
  token?: () => string | undefined;
}

export interface Reply {
  status: number;
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

export type Handler = (req: IncomingMessage) => Promise<Reply>;

export const JSON_TYPE = 'application/json; charset=utf-8';

export function errorReply(
  status: number,
  error: string,
  code: number = ReturnCode.InvalidRequest,
): Reply {
  const body: ErrorBody = { error, response: { ReturnCode: code, Message: error } };
  return { status, body };
}

/** A log line's address fields: `ip`, and `ips` when a pod holds one of each family. */
function ipFields(record: IpRecord): { ip: string; ips?: string[] } {
  const ips = addressesOf(record);
  return ips.length > 1 ? { ip: record.ip, ips } : { ip: record.ip };
}

/** The endpoints by path, each with its handler per method. */
export function nodeApiRoutes(
  deps: NodeApiDeps,
  log: Logger,
): Map<string, Record<string, Handler>> {
  const limit = deps.maxBodyBytes ?? DEFAULT_BODY_LIMIT;
  const notify = (kind: IpamChange['kind'], outcome: Outcome<unknown>): void => {
    if (!outcome.changed || !deps.onChange) return;
    try {
      deps.onChange({ kind, record: outcome.changed });
    } catch (err) {
      log.error('onChange hook failed', { error: (err as Error).message });
    }
  };

  /** Reads and validates a JSON body; a refusal is a 4xx with ReturnCode 23. */
  const withBody =
    <T>(parse: (body: unknown) => Parsed<T>, run: (value: T) => Reply): Handler =>
    async (req) => {
      const body = await readJsonBody(req, limit);
      if (!body.ok) {
        const reply = errorReply(body.status, body.error);
        // The rest of an oversized body is never read: do not reuse the socket.
        if (body.status === 413) reply.headers = { connection: 'close' };
        return reply;
      }
      const parsed = parse(body.value);
      if (!parsed.ok) return errorReply(400, parsed.error);
      return run(parsed.value);
    };

  const ipamReply = (outcome: Outcome<unknown>): Reply => {
    if (outcome.error !== undefined) log.error('ipam request failed', { error: outcome.error });
    return { status: outcome.status, body: outcome.body };
  };

  const probe = (
    check: () => boolean,
    up: string,
    down: string,
    why?: () => string | undefined,
  ): Handler => {
    return () => {
      let good = false;
      let reason: string | undefined;
      try {
        good = check();
        if (!good) reason = why?.();
      } catch (err) {
        log.warn('probe check failed', { error: (err as Error).message });
      }
      const body = good ? { status: up } : { status: down, ...(reason ? { reason } : {}) };
      return Promise.resolve({ status: good ? 200 : 503, body });
    };
  };

  const routes = new Map<string, Record<string, Handler>>([
    [PATHS.healthz, { GET: probe(() => deps.health.healthy(), 'ok', 'unhealthy') }],
    [
      PATHS.readyz,
      {
        GET: probe(
          () => deps.health.ready(),
          'ready',
          'not ready',
          () => deps.health.notReadyReason?.(),
        ),
      },
    ],
    [
      PATHS.metrics,
      {
        GET: async () => ({
          status: 200,
          body: await deps.metrics.render(),
          contentType: deps.metrics.contentType,
        }),
      },
    ],
    [PATHS.debugPool, { GET: () => Promise.resolve({ status: 200, body: deps.pool.debugPool() }) }],
    [
      PATHS.requestIpConfigs,
      {
        POST: withBody(parseIpConfigsRequest, (request) => {
          const waiting = deps.assignGate?.();
          if (waiting !== undefined) {
            log.info('ip request deferred', {
              pod: `${request.podNamespace}/${request.podName}`,
              reason: waiting,
            });
            return ipamReply(notYet(request, waiting));
          }
          const outcome = requestIpConfigs(deps.store, request);
          if (outcome.changed) {
            log.info('ip assigned', {
              podInterfaceID: request.podInterfaceID,
              pod: `${request.podNamespace}/${request.podName}`,
              ...ipFields(outcome.changed),
            });
          } else if (outcome.error === undefined) {
            log.warn('no available ip', {
              podInterfaceID: request.podInterfaceID,
              pod: `${request.podNamespace}/${request.podName}`,
            });
            try {
              deps.onNoIp?.(request);
            } catch (err) {
              log.error('onNoIp hook failed', { error: (err as Error).message });
            }
          }
          notify('assigned', outcome);
          for (const record of outcome.replaced ?? [])
            notify('replaced', { ...outcome, changed: record });
          return ipamReply(outcome);
        }),
      },
    ],
    [
      PATHS.releaseIpConfigs,
      {
        POST: withBody(parseIpConfigsRequest, (request) => {
          const outcome = releaseIpConfigs(deps.store, request);
          if (!outcome.changed && outcome.error === undefined && deps.onUnmatchedRelease) {
            for (const record of deps.onUnmatchedRelease(request)) {
              log.info('adopted ip released', {
                podInterfaceID: request.podInterfaceID,
                pod: `${request.podNamespace}/${request.podName}`,
                ip: record.ip,
              });
              notify('released', { ...outcome, changed: record });
            }
          }
          if (outcome.changed) {
            log.info('ip released', {
              podInterfaceID: request.podInterfaceID,
              ...ipFields(outcome.changed),
              state: outcome.changed.state,
            });
          }
          notify('released', outcome);
          return ipamReply(outcome);
        }),
      },
    ],
    [
      PATHS.debugIpAddresses,
      {
        POST: withBody(parseStateFilter, (states) =>
          ipamReply(listIpAddresses(deps.store, states)),
        ),
      },
    ],
    [
      PATHS.ipConfig,
      { POST: withBody(parseInterfaceLookup, (id) => ipamReply(lookupIpConfig(deps.store, id))) },
    ],
    [
      PATHS.attachments,
      {
        POST: withBody(parseAttachmentsQuery, (prefix) =>
          ipamReply(listAttachments(deps.store, prefix)),
        ),
      },
    ],
  ]);
  return routes;
}
