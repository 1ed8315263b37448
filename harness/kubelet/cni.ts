// The CNI side of the CNS IPAM contract, over HTTP: ask the node's sidecar
// for a pod IP and give it back. Answers are classified so the kubelet knows
// what to do: an IP, "no IP yet" (ReturnCode 32, retry later), a failure worth
// retrying (network, 5xx, unexpected) or one that is not (400, bad request).
import { PATHS, ReturnCode } from '../../src/nodeapi/cns.ts';
import type { IPConfigsResponse } from '../../src/nodeapi/cns.ts';
import { errorText } from '../../src/log/error-text.ts';

export interface PodRef {
  podName: string;
  podNamespace: string;
  /** The pod's uid: ids are derived from it, so they are stable across retries. */
  podUid: string;
}

export type IpamResult =
  | { kind: 'ok'; ips: string[] }
  | { kind: 'no-ip'; message: string }
  | { kind: 'error'; retryable: boolean; message: string };

export interface CniClient {
  requestIp(pod: PodRef): Promise<IpamResult>;
  releaseIp(pod: PodRef): Promise<IpamResult>;
}

/** The CNS request body for a pod, as a CNI sends it. */
export function ipConfigsRequest(pod: PodRef): Record<string, unknown> {
  return {
    podInterfaceID: `${pod.podUid}-eth0`,
    infraContainerID: pod.podUid,
    orchestratorContext: { PodName: pod.podName, PodNamespace: pod.podNamespace },
    desiredIPAddresses: [],
  };
}

/** Classifies one HTTP answer of request/release ipconfigs. Pure. */
export function classifyAnswer(status: number, body: unknown): IpamResult {
  const parsed = body as Partial<IPConfigsResponse> | undefined;
  const code = parsed?.response?.ReturnCode;
  const message = parsed?.response?.Message ?? `HTTP ${status}`;
  if (status >= 200 && status < 300 && code === ReturnCode.Success) {
    const ips = (parsed?.podIPInfo ?? [])
      .map((info) => info?.PodIPConfig?.IPAddress)
      .filter((ip): ip is string => typeof ip === 'string' && ip.length > 0);
    return { kind: 'ok', ips };
  }
  if (code === ReturnCode.FailedToAllocateIPConfig) return { kind: 'no-ip', message };
  const permanent =
    (status >= 400 && status < 500 && status !== 408 && status !== 429) ||
    code === ReturnCode.InvalidRequest ||
    code === ReturnCode.InvalidParameter;
  return {
    kind: 'error',
    retryable: !permanent,
    message: `HTTP ${status}, ReturnCode ${code ?? 'none'}: ${message}`,
  };
}

export interface HttpCniOptions {
  /** Per-call timeout; default 5 s. */
  timeoutMs?: number;
}

/**
 * A CniClient for the sidecar at `baseUrl` (e.g. http://127.0.0.1:10090);
 * a function is asked on every call (a restarted sidecar may move).
 */
export function httpCniClient(
  baseUrl: string | (() => string),
  options: HttpCniOptions = {},
): CniClient {
  const timeoutMs = options.timeoutMs ?? 5000;
  const base = typeof baseUrl === 'string' ? () => baseUrl : baseUrl;
  const call = async (path: string, pod: PodRef): Promise<IpamResult> => {
    let res: Response;
    try {
      res = await fetch(new URL(path, base()), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ipConfigsRequest(pod)),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      return {
        kind: 'error',
        retryable: true,
        message: `${path}: ${cause ?? errorText(err)}`,
      };
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      body = undefined;
    }
    return classifyAnswer(res.status, body);
  };
  return {
    requestIp: (pod) => call(PATHS.requestIpConfigs, pod),
    releaseIp: (pod) => call(PATHS.releaseIpConfigs, pod),
  };
}
