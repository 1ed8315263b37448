// `embedded --backend azure` (layout mixed) adds one node the Azure backend
// cannot serve: its VM has one NIC, in the node subnet, and no NIC in the pod
// subnet (README "On Azure": neither layout). The Node is cordoned, so no
// pod lands on it, and its NNC asks for one batch of IPs, as its sidecar
// would (server-side apply as azure-cns, through the sidecar's own writer).
// The report then shows what an operator would look for: the fulfiller's
// Warning Event on that NNC, raised once, and not one ARM write for it.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { DEFAULT_NAMESPACE, GROUP, NNC_PLURAL, NNC_VERSION } from '../../src/nnc/types.ts';
import { createNncWriter } from '../../src/sidecar/nnc-writer.ts';
import type { UnfitNodeOutcome } from './azure-report.ts';
import { UNFIT_NODE, UNFIT_REASON, UNFIT_REQUEST } from './azure-report.ts';
import { embeddedNodeStatus, nodeAddress } from './cluster.ts';

/**
 * Creates the cordoned Node (after the others: `index` picks its InternalIP)
 * and, once the fulfiller has created its NNC, writes the NNC's spec.
 * Resolves when the spec is written; throws after `timeoutMs` without an NNC.
 */
export async function addUnfitNode(
  kc: KubeConfig,
  providerID: string,
  index: number,
  timeoutMs = 30_000,
): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNode({
    body: {
      metadata: {
        name: UNFIT_NODE,
        labels: { 'kubernetes.io/hostname': UNFIT_NODE, 'kubernetes.io/os': 'linux' },
      },
      spec: { providerID, unschedulable: true },
    },
  });
  await core.patchNodeStatus(
    {
      name: UNFIT_NODE,
      body: { status: embeddedNodeStatus(UNFIT_NODE, nodeAddress(index), new Date()) },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const nncs = kc.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    const found = await nncs
      .getNamespacedCustomObject({
        group: GROUP,
        version: NNC_VERSION,
        namespace: DEFAULT_NAMESPACE,
        plural: NNC_PLURAL,
        name: UNFIT_NODE,
      })
      .then(
        () => true,
        () => false,
      );
    if (found) break;
    if (Date.now() > deadline) throw new Error(`no NNC for ${UNFIT_NODE} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  const writer = createNncWriter({ kc, name: UNFIT_NODE, namespace: DEFAULT_NAMESPACE });
  await writer.writeSpec({ requestedIPCount: UNFIT_REQUEST, ipsNotInUse: [] });
}

/** What became of the unfit node: read from the API server before it stops. */
export async function unfitNodeOutcome(
  kc: KubeConfig,
  armWrites: number,
): Promise<UnfitNodeOutcome> {
  const events = (
    await kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: DEFAULT_NAMESPACE })
  ).items.filter(
    (e) =>
      e.involvedObject.name === UNFIT_NODE &&
      e.involvedObject.kind === 'NodeNetworkConfig' &&
      e.type === 'Warning' &&
      e.reason === UNFIT_REASON,
  );
  const nnc = (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: GROUP,
    version: NNC_VERSION,
    namespace: DEFAULT_NAMESPACE,
    plural: NNC_PLURAL,
    name: UNFIT_NODE,
  })) as {
    spec?: { requestedIPCount?: number };
    status?: { networkContainers?: { ipAssignments?: unknown[] }[] };
  };
  return {
    node: UNFIT_NODE,
    events: events.length,
    eventCount: events.reduce((n, e) => n + (e.count ?? 1), 0),
    armWrites,
    requested: nnc.spec?.requestedIPCount ?? 0,
    allocated: (nnc.status?.networkContainers ?? []).reduce(
      (n, c) => n + (c.ipAssignments?.length ?? 0),
      0,
    ),
  };
}
