// The fulfiller without its CRDs: it says so once, waits with backoff (no
// 404 loop), /readyz says why, and it starts once the CRDs are applied.
import { expect } from 'chai';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../harness/apiserver/server.ts';
import { readCrdDir } from '../../harness/apiserver/crd-files.ts';
import { waitForCrds } from '../../src/kube/wait-for-crds.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller, type RunningFulfiller } from '../../src/fulfiller/run.ts';
import { CSS_PLURAL, CSS_VERSION, GROUP, NNC_PLURAL, NNC_VERSION } from '../../src/nnc/types.ts';
import { CRDS_DIR, waitFor } from '../support/wait.ts';

const NNC = { version: NNC_VERSION, plural: NNC_PLURAL };
const CSS = { version: CSS_VERSION, plural: CSS_PLURAL };

function notFound(): Error {
  return Object.assign(new Error('HTTP 404 the server could not find the requested resource'), {
    code: 404,
  });
}

describe('waiting for the CRDs', () => {
  it('says it once, retries with a growing delay, and once more when they are there', async () => {
    const capture = new CaptureTransport();
    const logger = createLogger({ level: 'debug', transports: [capture] });
    const delays: number[] = [];
    const reasons: (string | undefined)[] = [];
    let calls = 0;
    const ok = await waitForCrds({
      group: GROUP,
      resources: [NNC, CSS],
      discover: async (version) => {
        calls++;
        if (calls <= 8) throw notFound(); // neither version served: 4 rounds
        return version === NNC.version ? [NNC.plural] : calls <= 10 ? [] : [CSS.plural];
      },
      logger,
      backoff: { initialMs: 1000, maxMs: 60_000, factor: 2, jitter: 0 },
      sleep: async (ms) => void delays.push(ms),
      onWaiting: (r) => reasons.push(r),
    });
    expect(ok).to.equal(true);
    expect(delays).to.deep.equal([1000, 2000, 4000, 8000, 16000]);
    const warnings = capture.records.filter((r) => r.level === 'warn').map((r) => r.msg);
    // Once per reason: both missing, then the ClusterSubnetStates only; the
    // CRDs named as an operator reads them (and applies them), written out.
    expect(warnings).to.deep.equal([
      'CRDs not installed: nodenetworkconfigs.acn.azure.com, clustersubnetstates.acn.azure.com (kubectl apply -k manifests/crds/); waiting for them',
      'CRDs not installed: clustersubnetstates.acn.azure.com (kubectl apply -k manifests/crds/); waiting for them',
    ]);
    expect(capture.records.filter((r) => r.msg === 'CRDs installed')).to.have.length(1);
    expect(reasons.at(-1)).to.equal(undefined);
    expect(reasons[0]).to.match(/^CRDs not installed/);
  });

  it('ends when aborted', async () => {
    const stop = new AbortController();
    const ok = await waitForCrds({
      group: GROUP,
      resources: [NNC],
      discover: async () => {
        stop.abort();
        throw notFound();
      },
      logger: createLogger({ transports: [new CaptureTransport()] }),
      signal: stop.signal,
    });
    expect(ok).to.equal(false);
  });

  describe('a real fulfiller on an API server without the CRDs', function () {
    this.timeout(30_000);
    let server: ApiServer;
    let running: RunningFulfiller | undefined;
    before(async () => (server = await startApiServer({ port: 0 })));
    after(async () => {
      await running?.stop();
      await server.close();
    });

    it('/readyz says why it waits, and it starts once the CRDs are applied', async () => {
      const kc = new KubeConfig();
      kc.loadFromFile(server.kubeconfigPath);
      const capture = new CaptureTransport();
      const logger = createLogger({ level: 'debug', transports: [capture] });
      const starting = startFulfiller({
        kc,
        config: makeFulfillerConfig(),
        logger,
        events: false,
        listen: { host: '127.0.0.1', port: 0 },
        defaultMetrics: false,
        crdWaitBackoff: { initialMs: 100, maxMs: 400, factor: 2, jitter: 0 },
      }).then((r) => (running = r));
      await waitFor('the warning', () => capture.records.some((r) => r.level === 'warn'));
      const url = String(capture.records.find((r) => r.msg === 'listening')?.url);
      const readyz = await fetch(`${url}/readyz`);
      expect(readyz.status).to.equal(503);
      const body = (await readyz.json()) as { waiting?: string };
      expect(body.waiting).to.match(
        /^CRDs not installed: nodenetworkconfigs\.acn\.azure\.com, clustersubnetstates\.acn\.azure\.com/,
      );
      // A few retries later, still one warning and no watch started.
      await new Promise((r) => setTimeout(r, 1000));
      expect(capture.records.filter((r) => r.level === 'warn')).to.have.length(1);
      expect(capture.records.some((r) => /watch/.test(r.msg))).to.equal(false);
      const api = KubernetesObjectApi.makeApiClient(kc);
      for (const crd of readCrdDir(CRDS_DIR)) await api.create(crd as KubernetesObject);
      await starting;
      await running!.whenSynced();
      expect(capture.records.filter((r) => r.msg === 'CRDs installed')).to.have.length(1);
      await waitFor('ready', async () => (await fetch(`${url}/readyz`)).status === 200);
    });
  });
});
