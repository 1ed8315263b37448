// The workload's pod calls over plain HTTP (http-pod-api.ts) against the
// embedded API server: created, a second create refused with 409, the phase
// set through the status subresource, deleted, a second delete 404, and a
// bad token refused with 401 - each refusal as the status code the workload
// driver reads. The kubelets' status calls over the same client: a pod
// marked Running through the kubelet's status writer, and a pod the workload
// finished meanwhile left as it is (409 on the stale version, re-read).
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeConfigWithToken } from '../../harness/embedded/access.ts';
import {
  startEmbeddedCluster,
  WORKLOAD_NAMESPACE,
  type EmbeddedCluster,
} from '../../harness/embedded/cluster.ts';
import { httpPodApi } from '../../harness/embedded/http-pod-api.ts';
import { podStatusWriter } from '../../harness/kubelet/kube.ts';
import { workloadPod } from '../../harness/workload/pod.ts';
import { apiErrorInfo } from '../../src/kube/errors.ts';
import { silentLogger } from '../../src/log/logger.ts';

describe('embedded: pod calls over plain HTTP', function () {
  this.timeout(30_000);
  const runDir = mkdtempSync(join(tmpdir(), 'embedded-http-pods-'));
  let cluster: EmbeddedCluster;
  before(async () => {
    cluster = await startEmbeddedCluster({
      nodeNames: ['n-0'],
      podSubnet: '10.0.0.0/16',
      runDir,
      logger: silentLogger(),
      events: false,
    });
  });
  after(async () => {
    await cluster?.stop();
    rmSync(runDir, { recursive: true, force: true });
  });
  const statusOf = (p: Promise<unknown>) =>
    p.then(
      () => 'ok' as const,
      (err: unknown) => apiErrorInfo(err).statusCode,
    );
  // Bound to a node no kubelet serves: the pod stays as written.
  const pod = workloadPod({
    name: 'p-0',
    namespace: WORKLOAD_NAMESPACE,
    node: 'elsewhere',
    group: 'g',
    scenario: 's',
    scheduledAtMs: 0,
  });
  const stored = () =>
    (cluster.server.objects('', 'pods', WORKLOAD_NAMESPACE) as { status?: { phase?: string } }[])
      .length;

  it('creates, sets the phase, deletes; 409, 404 and 401 come back as status codes', async () => {
    const api = httpPodApi(cluster.kc);
    try {
      expect(await statusOf(api.createPod(pod))).to.equal('ok');
      expect(stored()).to.equal(1);
      expect(await statusOf(api.createPod(pod))).to.equal(409);
      expect(await statusOf(api.setPodPhase(WORKLOAD_NAMESPACE, 'p-0', 'Succeeded'))).to.equal(
        'ok',
      );
      const [written] = cluster.server.objects('', 'pods', WORKLOAD_NAMESPACE) as {
        status?: { phase?: string };
      }[];
      expect(written?.status?.phase).to.equal('Succeeded');
      expect(await statusOf(api.deletePod(WORKLOAD_NAMESPACE, 'p-0'))).to.equal('ok');
      expect(stored()).to.equal(0);
      expect(await statusOf(api.deletePod(WORKLOAD_NAMESPACE, 'p-0'))).to.equal(404);
    } finally {
      api.close();
    }
    const stranger = httpPodApi(kubeConfigWithToken(cluster.kc, 'not-a-token', 'stranger'));
    try {
      expect(await statusOf(stranger.createPod(pod))).to.equal(401);
      expect(stored()).to.equal(0);
    } finally {
      stranger.close();
    }
  });

  it("marks a pod Running through the kubelet's status writer; one finished meanwhile stays finished", async () => {
    const api = httpPodApi(cluster.kc);
    const other = { ...pod, metadata: { ...pod.metadata, name: 'p-1' } };
    try {
      await api.createPod(other);
      const seen = await api.readPodStatus(WORKLOAD_NAMESPACE, 'p-1');
      expect(seen.metadata?.name).to.equal('p-1');
      const writer = podStatusWriter(api, () => new Date(0));
      expect(await writer.setRunning(seen, ['10.0.0.9'])).to.equal('ok');
      const running = await api.readPodStatus(WORKLOAD_NAMESPACE, 'p-1');
      expect(running.status?.phase).to.equal('Running');
      expect(running.status?.podIP).to.equal('10.0.0.9');
      expect(new Date(String(running.status?.startTime)).getTime()).to.equal(0);

      // The workload completes it; a kubelet still holding the first version
      // gets 409 for it, re-reads the pod and leaves it Succeeded.
      expect(await statusOf(api.setPodPhase(WORKLOAD_NAMESPACE, 'p-1', 'Succeeded'))).to.equal(
        'ok',
      );
      const stale = { metadata: { resourceVersion: seen.metadata?.resourceVersion } };
      expect(
        await statusOf(
          api.patchPodStatus(WORKLOAD_NAMESPACE, 'p-1', { ...stale, status: { phase: 'Running' } }),
        ),
      ).to.equal(409);
      expect(await writer.setRunning(seen, ['10.0.0.9'])).to.equal('finished');
      const after = await api.readPodStatus(WORKLOAD_NAMESPACE, 'p-1');
      expect(after.status?.phase).to.equal('Succeeded');

      await api.deletePod(WORKLOAD_NAMESPACE, 'p-1');
      expect(await statusOf(api.readPodStatus(WORKLOAD_NAMESPACE, 'p-1'))).to.equal(404);
      expect(await writer.setRunning(seen, ['10.0.0.9'])).to.equal('gone');
    } finally {
      api.close();
    }
  });
});
