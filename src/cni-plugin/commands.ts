// The plugin's commands, each from the parsed configuration, the invocation
// and a node API client to what goes on stdout (undefined: nothing). The
// clock and the sleep are passed in, so every path is tested without a
// sidecar (test/cni/commands.test.ts).
import { PATHS, ReturnCode } from '../nodeapi/cns.ts';
import type { AttachmentsResponse, IPConfigsResponse } from '../nodeapi/cns.ts';
import type { NodeApiClient, HttpAnswer } from './client.ts';
import { SUPPORTED_VERSIONS } from './config.ts';
import type { IpamConfig } from './config.ts';
import { CniCode, CniError } from './errors.ts';
import { interfaceID, interfacePrefix, podOf } from './invocation.ts';
import type { Invocation } from './invocation.ts';
import { addressesOf, buildResult } from './result.ts';

export interface CommandDeps {
  client: NodeApiClient;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

/** The first retry of "no address yet" after 100 ms, doubling to 2 s. */
export function backoffMs(attempt: number): number {
  return Math.min(2000, 100 * 2 ** attempt);
}

interface CnsBody {
  response?: { ReturnCode?: number; Message?: string };
}

/** A non-success answer as the error the runtime sees. */
export function answerError(what: string, answer: HttpAnswer): CniError {
  const body = answer.body as CnsBody | undefined;
  const code = body?.response?.ReturnCode;
  const message = body?.response?.Message ?? `HTTP ${answer.status}`;
  if (answer.status === 401 || answer.status === 403)
    return new CniError(
      CniCode.NodeApiRefused,
      `${what}: the node API refused this plugin (HTTP ${answer.status}); ipam.tokenFile must hold the sidecar's --node-api-token-file token`,
    );
  if (answer.status >= 500 || answer.status === 0 || answer.status === 429)
    return new CniError(CniCode.TryAgainLater, `${what}: the node API failed: ${message}`);
  return new CniError(
    CniCode.NodeApiError,
    `${what}: the node API answered HTTP ${answer.status}, ReturnCode ${code ?? 'none'}: ${message}`,
  );
}

function ipConfigsBody(
  conf: IpamConfig,
  inv: Invocation,
  pod = podOf(inv),
): Record<string, unknown> {
  return {
    podInterfaceID: interfaceID(conf.network, inv.containerID!, inv.ifname!),
    infraContainerID: inv.containerID,
    // DEL may come without CNI_ARGS: the release matches the interface id alone.
    orchestratorContext: pod
      ? { PodName: pod.podName, PodNamespace: pod.podNamespace }
      : { PodName: inv.containerID, PodNamespace: '-' },
    desiredIPAddresses: [],
  };
}

export async function add(conf: IpamConfig, inv: Invocation, deps: CommandDeps): Promise<unknown> {
  const pod = podOf(inv);
  if (!pod)
    throw new CniError(
      CniCode.InvalidEnvironment,
      'CNI_ARGS must carry K8S_POD_NAMESPACE and K8S_POD_NAME: the sidecar hands addresses to pods of its node and reclaims one whose pod it cannot find',
    );
  const body = ipConfigsBody(conf, inv, pod);
  const deadline = deps.now() + conf.addTimeoutSeconds * 1000;
  for (let attempt = 0; ; attempt++) {
    const answer = await deps.client.call('POST', PATHS.requestIpConfigs, body);
    const cns = answer.body as IPConfigsResponse | undefined;
    const code = cns?.response?.ReturnCode;
    if (answer.status === 200 && code === ReturnCode.Success && cns?.podIPInfo?.[0])
      return buildResult(conf, cns.podIPInfo[0]);
    if (answer.status !== 200 || code !== ReturnCode.FailedToAllocateIPConfig)
      throw answerError(`no address for ${pod.podNamespace}/${pod.podName}`, answer);
    const wait = backoffMs(attempt);
    if (deps.now() + wait > deadline)
      throw new CniError(
        CniCode.TryAgainLater,
        `no address for ${pod.podNamespace}/${pod.podName} within ${conf.addTimeoutSeconds} s (ipam.addTimeoutSeconds): ${cns?.response?.Message ?? ''}`,
      );
    await deps.sleep(wait);
  }
}

/** Idempotent: an attachment the sidecar does not know is released already. */
export async function del(
  conf: IpamConfig,
  inv: Invocation,
  deps: CommandDeps,
): Promise<undefined> {
  const answer = await deps.client.call('POST', PATHS.releaseIpConfigs, ipConfigsBody(conf, inv));
  const code = (answer.body as CnsBody | undefined)?.response?.ReturnCode;
  if (answer.status !== 200 || code !== ReturnCode.Success)
    throw answerError(`cannot release ${inv.containerID}/${inv.ifname}`, answer);
  return undefined;
}

export async function check(
  conf: IpamConfig,
  inv: Invocation,
  deps: CommandDeps,
): Promise<undefined> {
  const id = interfaceID(conf.network, inv.containerID!, inv.ifname!);
  const answer = await deps.client.call('POST', PATHS.ipConfig, { podInterfaceID: id });
  const cns = answer.body as IPConfigsResponse | undefined;
  const code = cns?.response?.ReturnCode;
  if (answer.status === 200 && code === ReturnCode.NotFound)
    throw new CniError(
      CniCode.UnknownContainer,
      `the sidecar holds no address for ${inv.containerID}/${inv.ifname} on network ${conf.network}`,
    );
  if (answer.status !== 200 || code !== ReturnCode.Success || !cns?.podIPInfo?.[0])
    throw answerError(`cannot check ${inv.containerID}/${inv.ifname}`, answer);
  const held = cns.podIPInfo[0].PodIPConfig.IPAddress;
  const given = addressesOf(conf.prevResult);
  if (conf.prevResult !== undefined && !given.includes(held))
    throw new CniError(
      CniCode.AddressMismatch,
      `the sidecar holds ${held} for ${inv.containerID}/${inv.ifname}, the runtime's result has ${given.join(', ') || 'no address'}`,
    );
  return undefined;
}

/** Releases every attachment of this network the runtime no longer knows. */
export async function gc(conf: IpamConfig, deps: CommandDeps): Promise<undefined> {
  const prefix = interfacePrefix(conf.network);
  const answer = await deps.client.call('POST', PATHS.attachments, {
    podInterfaceIDPrefix: prefix,
  });
  const list = answer.body as AttachmentsResponse | undefined;
  if (answer.status !== 200 || list?.response?.ReturnCode !== ReturnCode.Success)
    throw answerError('cannot list the attachments', answer);
  const valid = new Set(
    (conf.validAttachments ?? []).map((a) => interfaceID(conf.network, a.containerID, a.ifname)),
  );
  const failures: string[] = [];
  for (const a of list.attachments) {
    if (valid.has(a.podInterfaceID)) continue;
    const release = await deps.client.call('POST', PATHS.releaseIpConfigs, {
      podInterfaceID: a.podInterfaceID,
      infraContainerID: a.infraContainerID,
      orchestratorContext: { PodName: a.podName, PodNamespace: a.podNamespace },
      desiredIPAddresses: [],
    });
    if (release.status !== 200) failures.push(`${a.podInterfaceID} (HTTP ${release.status})`);
  }
  if (failures.length > 0)
    throw new CniError(CniCode.TryAgainLater, `GC could not release ${failures.join(', ')}`);
  return undefined;
}

/** Succeeds (no output) only while the sidecar is ready and its pool can serve an ADD. */
export async function status(deps: CommandDeps): Promise<undefined> {
  const notAvailable = (why: string): CniError =>
    new CniError(CniCode.NotAvailable, `pool-monitor-cni cannot serve: ${why}`);
  let ready: HttpAnswer;
  try {
    ready = await deps.client.call('GET', PATHS.readyz);
  } catch (err) {
    throw notAvailable((err as Error).message);
  }
  if (ready.status !== 200) {
    const reason = (ready.body as { reason?: string } | undefined)?.reason;
    throw notAvailable(
      `the node's sidecar is not ready (HTTP ${ready.status}${reason ? `: ${reason}` : ''})`,
    );
  }
  const pool = await deps.client.call('GET', PATHS.debugPool);
  const view = pool.body as { exhausted?: boolean; ipCounts?: { Available?: number } } | undefined;
  if (pool.status === 200 && view?.exhausted === true && view.ipCounts?.Available === 0)
    throw notAvailable('no address is free on this node and the subnet is exhausted');
  return undefined;
}

export function version(cniVersion: string): unknown {
  return { cniVersion, supportedVersions: [...SUPPORTED_VERSIONS] };
}
