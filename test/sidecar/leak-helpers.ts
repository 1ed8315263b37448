// CNI calls and pod status writes for the leak and adoption tests: what a
// kubelet and its CNI do, over real HTTP.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Cluster } from './harness.ts';
import { sleep } from './harness.ts';

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface IpamAnswer {
  code: number;
  ip?: string;
  message: string;
}

/** The CNS body for pod `name` (namespace default) under sandbox `sandbox`. */
export function cniBody(name: string, sandbox = `${name}-sandbox-1`): Record<string, unknown> {
  return {
    podInterfaceID: `${sandbox}-eth0`,
    infraContainerID: sandbox,
    orchestratorContext: { PodName: name, PodNamespace: 'default' },
    desiredIPAddresses: [],
  };
}

/** One CNI call, no retry. */
export async function cniCall(
  url: string,
  verb: 'request' | 'release',
  body: Record<string, unknown>,
): Promise<IpamAnswer> {
  const res = await fetch(`${url}/network/${verb}ipconfigs`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as {
    response: { ReturnCode: number; Message: string };
    podIPInfo?: { PodIPConfig: { IPAddress: string } }[];
  };
  const ip = json.podIPInfo?.[0]?.PodIPConfig.IPAddress;
  return { code: json.response.ReturnCode, message: json.response.Message, ...(ip ? { ip } : {}) };
}

/** An IP request as a CNI makes it: retried while the answer is 32 (no IP yet). */
export async function cniRequest(
  url: string,
  name: string,
  sandbox?: string,
  timeoutMs = 10_000,
): Promise<IpamAnswer> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const answer = await cniCall(url, 'request', cniBody(name, sandbox));
    if (answer.code !== 32 || Date.now() > until) return answer;
    await sleep(50);
  }
}

/** The pod as its kubelet reports it once started: Running with its IP. */
export async function setPodRunning(
  c: Cluster,
  name: string,
  ip: string,
  namespace = 'default',
): Promise<void> {
  await c.core.patchNamespacedPodStatus(
    { name, namespace, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
    MERGE,
  );
}
