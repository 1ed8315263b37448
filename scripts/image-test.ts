// `make image-test`: the image ($IMAGE, localhost/ipam-pool-monitor:0.2.0 by
// default, built by `make image`) run as the manifests run it: podman with
// runc, a read-only root, user 65532, every capability dropped, no new
// privileges, the host's network (hostNetwork), /tmp and the sidecar's state
// directory the only writable places (the manifests' emptyDir and hostPath).
// Against `bin/pool-monitor apiserver` on this machine and an ARM emulator in
// this process (harness/azure-emulator), it starts:
// - the fulfiller with the cidr backend, until /readyz and two Nodes' NNCs
//   hold addresses;
// - the sidecar of the first Node, from the bundle, until /readyz;
// - the fulfiller with the azure backend (its own namespace), until /readyz
//   and both Nodes' NNCs hold addresses put on their NICs through ARM (one a
//   VM, one a scale-set instance: @azure/arm-network and arm-compute);
// - one-off runs: @azure/identity's DefaultAzureCredential constructed (the
//   azure backend without a token file), `simulate --help`, and the CNI
//   plugin the DaemonSet installs (dist/pool-monitor-cni): its VERSION, and
//   that it is static (no ELF interpreter: it needs no loader, libc or Node
//   on the host); then the DaemonSet's init container install-cni-plugin,
//   its script as the manifest has it (root, no capabilities, read-only),
//   into a directory standing for the host's /opt/cni/bin, and the binary
//   it put there run on this host.
// Then prints the image's size and each process's RSS. Its containers are
// removed however it ends (and on SIGINT/SIGTERM); a failure prints their logs.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import {
  CLOUD_RESOURCE_GROUP,
  CLOUD_SUBSCRIPTION,
  CLOUD_TOKEN,
  EmulatedCloud,
} from '../harness/azure-emulator/cloud.ts';
import { loadKubeConfig } from '../src/kube/config.ts';
import type { NodeNetworkConfig } from '../src/nnc/types.ts';
import { dynamicContainers, GROUP, NNC_PLURAL, NNC_VERSION } from '../src/nnc/types.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const IMAGE = process.env.IMAGE ?? 'localhost/ipam-pool-monitor:0.2.0';
const TIMEOUT_MS = Number(process.env.IMAGE_TEST_TIMEOUT_MS ?? 180_000);
const NODES = ['image-test-0', 'image-test-1'];
const AZURE_NS = 'pool-monitor-azure';
const started = Date.now();
const secs = () => ((Date.now() - started) / 1000).toFixed(1);
const say = (msg: string) => console.log(`image-test: [${secs()} s] ${msg}`);

/** The manifests' securityContext, for podman (runc: crun refuses this machine's mixed cgroups). */
const ASIN_MANIFESTS = [
  ...['--runtime', 'runc', '--pull', 'never', '--network', 'host'],
  ...['--read-only', '--read-only-tmpfs=false', '--user', '65532:65532', '--cap-drop', 'ALL'],
  ...['--security-opt', 'no-new-privileges'],
  // podman's raised defaults are refused here; a kubelet's are the runtime's.
  ...['--ulimit', 'nofile=1024:4096', '--ulimit', 'nproc=4096:4096'],
  ...['--tmpfs', '/tmp:rw,nosuid,nodev,mode=1777'],
];

const containers: string[] = [];
let apiserver: ChildProcess | undefined;
let cloud: EmulatedCloud | undefined;
let dir = '';

/** Runs podman; its stdout. `input` is written to its stdin. */
async function podman(...args: string[]): Promise<string> {
  return podmanWith(undefined, args);
}

async function podmanWith(input: string | undefined, args: string[]): Promise<string> {
  const child = execFile('podman', args, { maxBuffer: 64 << 20 });
  const out = new Promise<string>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(stdout.trim())
        : reject(
            new Error(
              `podman ${args.join(' ')}: exit ${code}: ${(stderr + stdout).trim().slice(-1000)}`,
            ),
          ),
    );
  });
  child.stdin?.end(input ?? '');
  return out;
}

interface InitContainer {
  name: string;
  command: string[];
  args: string[];
  securityContext: { runAsUser: number };
}

/**
 * The DaemonSet's init container install-cni-plugin as the manifest runs
 * it, into a directory standing for the host's /opt/cni/bin that holds what
 * a release before the Go plugin put there (.pool-monitor-cni/); then the
 * binary it installed, run on this host.
 */
async function installCniPlugin(): Promise<void> {
  const [ds] = parseAllDocuments(
    readFileSync(join(ROOT, 'manifests/sidecar/daemonset.yaml'), 'utf8'),
  ).map((d) => d.toJS() as { spec: { template: { spec: { initContainers: InitContainer[] } } } });
  const init = ds!.spec.template.spec.initContainers.find((c) => c.name === 'install-cni-plugin');
  if (!init)
    throw new Error('manifests/sidecar/daemonset.yaml: no init container install-cni-plugin');
  const cniBin = join(dir, 'opt-cni-bin');
  mkdirSync(join(cniBin, '.pool-monitor-cni'), { recursive: true });
  writeFileSync(join(cniBin, '.pool-monitor-cni', 'node'), 'an older release');
  const user = String(init.securityContext.runAsUser);
  const flags = ASIN_MANIFESTS.map((f, i) =>
    ASIN_MANIFESTS[i - 1] === '--user' ? `${user}:${user}` : f,
  );
  await podman(
    ...['run', '--rm', ...flags, '-v', `${cniBin}:/host/opt/cni/bin`],
    ...['--entrypoint', JSON.stringify(init.command), IMAGE, ...init.args],
  );
  if (existsSync(join(cniBin, '.pool-monitor-cni')))
    throw new Error('install-cni-plugin left .pool-monitor-cni/ of an older release');
  const installed = join(cniBin, 'pool-monitor-cni');
  const out = await new Promise<string>((resolve, reject) => {
    const child = execFile(installed, [], { env: { CNI_COMMAND: 'VERSION' } }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
    child.stdin?.end('{"cniVersion":"1.1.0"}');
  });
  if (!out.includes('supportedVersions')) throw new Error(`installed pool-monitor-cni: ${out}`);
  say(
    'install-cni-plugin (as the DaemonSet runs it) installed pool-monitor-cni, which runs on this host',
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  let last = '';
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = String(err);
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${TIMEOUT_MS / 1000} s ${last}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts a detached container of the image; its name. */
async function container(name: string, extra: string[], args: string[]): Promise<string> {
  const full = `pool-monitor-image-test-${process.pid}-${name}`;
  containers.push(full);
  await podman('run', '-d', '--name', full, ...ASIN_MANIFESTS, ...extra, IMAGE, ...args);
  return full;
}

async function readyz(what: string, name: string, url: string): Promise<number> {
  const t0 = Date.now();
  let body = '';
  await waitFor(`${what} /readyz`, async () => {
    const state = await podman('inspect', '--format', '{{.State.Status}}', name);
    if (state !== 'running') throw new Error(`${what} is ${state}`);
    const res = await fetch(url).catch(() => undefined);
    body = res ? await res.text() : '';
    return res?.status === 200 ? true : undefined;
  }).catch((err: Error) => {
    throw new Error(`${err.message}; last /readyz: ${body.slice(0, 500)}`);
  });
  return (Date.now() - t0) / 1000;
}

async function rssMiB(name: string): Promise<string> {
  try {
    const pid = await podman('inspect', '--format', '{{.State.Pid}}', name);
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? `${(Number(m[1]) / 1024).toFixed(1)} MiB` : '?';
  } catch {
    return '?';
  }
}

async function cleanup(failed: boolean): Promise<void> {
  for (const name of containers) {
    if (failed) {
      const logs = await podman('logs', '--tail', '40', name).catch(() => '');
      console.log(`--- ${name} (last 40 lines)\n${logs}`);
    }
    await podman('rm', '-f', '-t', '2', name).catch(() => undefined);
  }
  containers.length = 0;
  apiserver?.kill('SIGTERM');
  await cloud?.stop().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  await podman('image', 'exists', IMAGE).catch(() => {
    throw new Error(`no image ${IMAGE}: run 'make image' first`);
  });
  dir = mkdtempSync(join(tmpdir(), 'pm-image-test-'));
  const kube = join(dir, 'kube');
  const state = join(dir, 'state');
  mkdirSync(kube);
  mkdirSync(state);

  // The local API server, as `bin/pool-monitor apiserver` (the CRDs applied).
  const kubeconfig = join(kube, 'kubeconfig');
  apiserver = spawn(
    join(ROOT, 'bin/pool-monitor'),
    ['apiserver', '--crds', join(ROOT, 'manifests/crds'), '--kubeconfig', kubeconfig],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await waitFor('the API server', () => existsSync(kubeconfig) || undefined);
  const { kc, connections } = loadKubeConfig({ kubeconfig });
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await waitFor('the API server', () => core.listNode().then(() => true));
  say(`bin/pool-monitor apiserver at ${kc.getCurrentCluster()?.server}`);

  cloud = new EmulatedCloud({ log: true });
  await cloud.start();
  say(`ARM emulator at ${cloud.emulator.endpoint}`);
  // One VM and one scale-set instance: NICs through arm-network and arm-compute.
  const layouts = ['pod-nic', 'scale-set'] as const;
  for (const [i, name] of NODES.entries()) {
    const providerID = cloud.addNode(name, layouts[i]);
    await core.createNode({ body: { metadata: { name }, spec: { providerID } } });
  }
  await core.createNamespace({ body: { metadata: { name: AZURE_NS } } }).catch(() => undefined);
  writeFileSync(join(kube, 'arm-token'), CLOUD_TOKEN);
  // The files as the pods get them: readable by 65532 only.
  for (const p of [kube, join(kube, 'kubeconfig'), join(kube, 'arm-token'), state]) {
    if (process.getuid?.() === 0) chownSync(p, 65532, 65532);
    else chmodSync(p, p === kube || p === state ? 0o755 : 0o644);
  }
  const kubeMount = ['-v', `${kube}:/kube:ro`];

  // The fulfiller, cidr backend.
  const cidrPort = await freePort();
  const cidr = await container('fulfiller-cidr', kubeMount, [
    ...['fulfiller', '--kubeconfig', '/kube/kubeconfig', '--leader-elect', 'false'],
    ...['--subnet', '10.240.0.0/16', '--listen', `127.0.0.1:${cidrPort}`],
  ]);
  const cidrReady = await readyz('fulfiller (cidr)', cidr, `http://127.0.0.1:${cidrPort}/readyz`);
  say(`fulfiller (cidr backend) answered /readyz ${cidrReady.toFixed(1)} s after start`);

  // The sidecar of the first Node, its state directory a host directory (hostPath).
  const sidecarPort = await freePort();
  const sidecar = await container(
    'sidecar',
    [...kubeMount, '-v', `${state}:/var/lib/pool-monitor`, '-e', `NODENAME=${NODES[0]}`],
    [
      ...['sidecar', '--kubeconfig', '/kube/kubeconfig', '--state-dir', '/var/lib/pool-monitor'],
      ...['--listen', `127.0.0.1:${sidecarPort}`],
    ],
  );
  const sidecarReady = await readyz('sidecar', sidecar, `http://127.0.0.1:${sidecarPort}/readyz`);
  say(`sidecar answered /readyz ${sidecarReady.toFixed(1)} s after start`);

  const nnc = (ns: string, name: string) =>
    custom
      .getNamespacedCustomObject({
        group: GROUP,
        version: NNC_VERSION,
        namespace: ns,
        plural: NNC_PLURAL,
        name,
      })
      .then((o) => o as NodeNetworkConfig);
  const ips = async (ns: string, name: string) =>
    (dynamicContainers(await nnc(ns, name))[0]?.ipAssignments ?? []).length;
  const filled = await waitFor(`${NODES[0]}'s NNC filled by the sidecar's request`, async () => {
    const n = await ips('kube-system', NODES[0]!);
    return n > 0 ? n : undefined;
  });
  say(`${NODES[0]}: the sidecar asked, the cidr fulfiller gave ${filled} addresses`);

  // The fulfiller, azure backend, in a namespace of its own.
  const azurePort = await freePort();
  const azure = await container('fulfiller-azure', kubeMount, [
    ...['fulfiller', '--kubeconfig', '/kube/kubeconfig', '--leader-elect', 'false'],
    ...['--namespace', AZURE_NS, '--backend', 'azure', '--azure-token-file', '/kube/arm-token'],
    ...[
      '--azure-subscription-id',
      CLOUD_SUBSCRIPTION,
      '--azure-resource-group',
      CLOUD_RESOURCE_GROUP,
    ],
    ...['--pod-subnet-id', cloud.podSubnetId, '--azure-endpoint', cloud.emulator.endpoint],
    ...['--listen', `127.0.0.1:${azurePort}`],
  ]);
  const azureReady = await readyz(
    'fulfiller (azure)',
    azure,
    `http://127.0.0.1:${azurePort}/readyz`,
  );
  say(`fulfiller (azure backend) answered /readyz ${azureReady.toFixed(1)} s after start`);
  // Each NNC's spec asks for 8 (a 409, the fulfiller having written
  // meanwhile, is read again and retried).
  for (const name of NODES) {
    await waitFor(`${name}'s NNC in ${AZURE_NS} asking for 8`, async () => {
      const cur = await nnc(AZURE_NS, name);
      await custom.replaceNamespacedCustomObject({
        ...{ group: GROUP, version: NNC_VERSION, namespace: AZURE_NS, plural: NNC_PLURAL, name },
        body: { ...cur, spec: { requestedIPCount: 8 } },
      });
      return true;
    });
  }
  for (const name of NODES) {
    await waitFor(
      `${name}: 8 addresses on its NIC through ARM`,
      async () => (await ips(AZURE_NS, name)) === 8 || undefined,
    );
  }
  const puts = cloud.emulator.requests.filter(
    (r) => r.status < 300 && /CreateOrUpdate|Update/.test(r.operation),
  );
  say(
    `azure backend: 8 addresses each on a VM's and a scale-set instance's NIC (${puts.length} ARM writes)`,
  );

  // One-off runs of the image's other entry points.
  const oneOff = (args: string[], entrypoint?: string, env: string[] = [], input?: string) =>
    podmanWith(input, [
      ...['run', '--rm', ...(input !== undefined ? ['-i'] : []), ...ASIN_MANIFESTS, ...env],
      ...(entrypoint ? ['--entrypoint', entrypoint] : []),
      ...[IMAGE, ...args],
    ]);
  await oneOff(
    [
      '--input-type=module',
      '-e',
      "const { DefaultAzureCredential } = await import('@azure/identity'); new DefaultAzureCredential(); console.log('ok');",
    ],
    'node',
  ).then((out) => {
    if (!out.endsWith('ok')) throw new Error(`DefaultAzureCredential: ${out}`);
  });
  say('@azure/identity: DefaultAzureCredential constructed');
  await oneOff(['simulate', '--help']);
  const version = await oneOff(
    [],
    'dist/pool-monitor-cni',
    ['-e', 'CNI_COMMAND=VERSION'],
    '{"cniVersion":"1.0.0"}',
  );
  if (!version.includes('supportedVersions'))
    throw new Error(`pool-monitor-cni VERSION: ${version}`);
  // The program headers of the binary: a PT_INTERP (3) names a dynamic loader.
  const elf = await oneOff(
    [
      '-e',
      `const b = require('fs').readFileSync('dist/pool-monitor-cni');
       const off = Number(b.readBigUInt64LE(32)), size = b.readUInt16LE(54), n = b.readUInt16LE(56);
       const interp = Array.from({ length: n }, (_, i) => b.readUInt32LE(off + i * size)).includes(3);
       console.log(interp ? 'dynamic' : 'static', b.length);`,
    ],
    'node',
  );
  if (!elf.startsWith('static ')) throw new Error(`dist/pool-monitor-cni is not static: ${elf}`);
  say(
    `simulate --help ran; pool-monitor-cni (static, ${(Number(elf.split(' ')[1]) / 2 ** 20).toFixed(1)} MiB) VERSION: ${version.replace(/\s+/g, ' ').slice(0, 80)}`,
  );
  await installCniPlugin();

  const bytes = Number(await podman('image', 'inspect', '--format', '{{.Size}}', IMAGE));
  const rss = await Promise.all([sidecar, cidr, azure].map(rssMiB));
  console.log(
    `image-test: ${IMAGE} ${(bytes / 1e6).toFixed(0)} MB; RSS sidecar ${rss[0]}, ` +
      `fulfiller (cidr) ${rss[1]}, fulfiller (azure) ${rss[2]}`,
  );
  await connections.destroy();
}

let failed = true;
const stop = (signal: string) => {
  void cleanup(true).finally(() => {
    console.error(`image-test: stopped by ${signal}`);
    process.exit(1);
  });
};
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));
try {
  await main();
  failed = false;
} catch (err) {
  console.error(`image-test: FAILED: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await cleanup(failed);
}
console.log(failed ? `image-test: failed after ${secs()} s` : `image-test: passed in ${secs()} s`);
process.exit(failed ? 1 : 0);
