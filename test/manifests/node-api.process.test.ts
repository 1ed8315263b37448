// The shipped DaemonSet, the plugin's defaults and every example
// configuration together (issue 55): the README's overlay rendered by
// `kubectl kustomize`, its DaemonSet's init containers and sidecar run on
// this machine with exactly their commands, arguments, environment and
// mounts, the node's paths under a temp dir (pod-on-host.ts); the plugin
// the init container installed then runs as a runtime runs it, as root in
// a mount namespace whose /run is the node's, so that its defaults
// (/run/pool-monitor/cns.sock, /run/pool-monitor/node-api-token) are the
// node's. ADD, CHECK, DEL, GC and STATUS with every example and with a bare
// `{"type": "pool-monitor-cni"}`; a token others can read refused; the
// conflist the DaemonSet writes is the README's, byte for byte, written by
// rename; the cleanup DaemonSet leaves nothing of it. Differences from a
// node: the sidecar runs as this user (root) rather than 65532 (the modes
// that let 65532 work are checked instead), and finds the API server through
// KUBECONFIG rather than in-cluster. Root only, with the kubectl the
// manifests' tests use; otherwise one line says why.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdtempSync,
  openSync,
  closeSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  killStraySidecars,
  spawnSidecar,
  startCluster,
  type Cluster,
  type SidecarProcess,
} from '../sidecar/harness.ts';
import { overSocket } from '../support/socket-sidecar.ts';
import { waitFor } from '../support/wait.ts';
import { kubectlBin } from '../support/kubectl.ts';
import { execCni, libcniConf, whyNoPlugin, type CniRun } from '../cni/netns.ts';
import {
  commandOf,
  envOf,
  mountsOf,
  NodeTree,
  podOf,
  REPO,
  runToEnd,
  type Downward,
  type PodSpec,
  type Rendered,
} from './pod-on-host.ts';

const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const EXAMPLES = join(REPO, 'manifests/examples/cni');
const NODE = 'node-api-0';

function render(bin: string, dir: string): Rendered[] {
  return parseAllDocuments(execFileSync(bin, ['kustomize', dir], { encoding: 'utf8' })).map(
    (d) => d.toJS() as Rendered,
  );
}

/** The README's overlay ("Install", step 3) in `dir`: its kustomization and the conflist it copies. */
function readmeOverlay(dir: string): string {
  const text = /cat > deploy\/kustomization\.yaml <<'YAML'\n([\s\S]*?)\nYAML\n/.exec(README)?.[1];
  const cp = /^mkdir -p deploy && cp (\S+) deploy\/(\S+)$/m.exec(README);
  expect(text, 'the overlay in README "Install"').to.be.a('string');
  expect(cp, 'the conflist README "Install" copies').to.not.equal(null);
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    text!.replace('  - ../manifests', `  - ${relative(dir, join(REPO, 'manifests'))}`),
  );
  copyFileSync(join(REPO, cp![1]!), join(dir, cp![2]!));
  return cp![2]!;
}

/** The configuration README "On any cluster" shows. */
function documentedConflist(): string {
  const section = README.split('### On any cluster\n')[1]!.split('\n### ')[0]!;
  return `${/```json\n([\s\S]*?)```/.exec(section)![1]!}`;
}

interface Example {
  file: string;
  list: { name: string; cniVersion: string };
  /** The plugin whose ipam is pool-monitor-cni, as the main plugin gets it. */
  entry: Record<string, unknown>;
}

/** Every example configuration, as written, and the bare one. */
function examples(): Example[] {
  const out: Example[] = [];
  for (const file of readdirSync(EXAMPLES).sort()) {
    const text = readFileSync(join(EXAMPLES, file), 'utf8');
    if (file.endsWith('.conflist')) {
      const list = JSON.parse(text) as Example['list'] & { plugins: Record<string, unknown>[] };
      const entry = list.plugins.find(
        (p) => (p.ipam as { type?: string } | undefined)?.type === 'pool-monitor-cni',
      );
      expect(entry, `${file}: a plugin with pool-monitor-cni as its ipam`).to.not.equal(undefined);
      out.push({ file, list, entry: entry! });
    } else if (file.endsWith('.yaml')) {
      for (const doc of parseAllDocuments(text)) {
        const o = doc.toJS() as { kind: string; spec: { config: string } };
        if (o.kind !== 'NetworkAttachmentDefinition') continue;
        const conf = JSON.parse(o.spec.config) as Example['list'] & Record<string, unknown>;
        out.push({ file, list: conf, entry: conf });
      }
    }
  }
  out.push({
    file: 'bare',
    list: { name: 'bare', cniVersion: '1.1.0' },
    entry: { type: 'macvlan', master: 'eth0', ipam: { type: 'pool-monitor-cni' } },
  });
  return out;
}

describe('the shipped DaemonSet, the plugin and every example configuration on one node (process)', function () {
  this.timeout(120_000);
  let why: string | undefined;
  let kubectl = '';
  let work: string;
  let tree: NodeTree;
  let pod: PodSpec;
  let rendered: Rendered[];
  let volumes: Map<string, string>;
  let c: Cluster | undefined;
  let sidecar: SidecarProcess | undefined;
  let conflistName = '';
  let token = '';
  const downward: Downward = {
    'spec.nodeName': NODE,
    // A loopback address of its own: the metrics port is the DaemonSet's.
    'status.hostIP': `127.${20 + (process.pid % 200)}.${Math.floor(Math.random() * 250)}.7`,
  };
  const sock = () => tree.host('/run/pool-monitor/cns.sock');

  /** The installed plugin, as root in a mount namespace whose /run is the node's. */
  function plugin(env: Record<string, string>, stdin: unknown): Promise<CniRun> {
    return execCni(
      'unshare',
      [
        ...['--mount', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /run && exec "$@"'],
        ...[tree.host('/run'), tree.host('/opt/cni/bin/pool-monitor-cni')],
      ],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      JSON.stringify(stdin),
    );
  }
  const env = (cmd: string, ctr: string) => ({
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: ctr,
    CNI_IFNAME: 'eth0',
    CNI_NETNS: `/var/run/netns/${ctr}`,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${ctr};K8S_POD_INFRA_CONTAINER_ID=${ctr}`,
  });
  const stateOf = async (ip: string) => {
    const res = await overSocket(sock(), token, 'POST', '/debug/ipaddresses', {});
    const list = res.json.IPConfigurationStatus as { IPAddress: string; State: string }[];
    return list.find((r) => r.IPAddress === ip)?.State;
  };

  before(async function () {
    why =
      process.getuid?.() !== 0
        ? 'it needs root (the init containers chown; the plugin runs in a mount namespace)'
        : kubectlBin('1.33') === undefined
          ? 'kubectl.1.33 is not installed beside the kubectl on PATH'
          : whyNoPlugin();
    if (why) {
      console.log(`    skipped: the DaemonSet on host paths: ${why}`);
      this.skip();
    }
    kubectl = kubectlBin('1.33')!;
    work = mkdtempSync(join(tmpdir(), 'node-api-'));
    const overlay = join(work, 'deploy');
    execFileSync('mkdir', ['-p', overlay]);
    conflistName = readmeOverlay(overlay);
    rendered = render(kubectl, overlay);
    pod = podOf(rendered, 'DaemonSet', 'pool-monitor');
    tree = new NodeTree(join(work, 'node'));
    volumes = tree.volumes(
      pod,
      rendered.filter((o) => o.kind === 'ConfigMap'),
    );
    // What is on a node before: a configuration of another network, which stays.
    writeFileSync(tree.host('/etc/cni/net.d/99-other.conflist'), '{"note":"not ours"}\n');

    c = await startCluster();
    await createNnc(
      c,
      NODE,
      { requestedIPCount: 16 },
      { scaler: DEFAULT_SCALER, networkContainers: [container(Array.from({ length: 16 }, (_, i) => i))] },
    );
    for (const ex of examples())
      for (const i of [1, 2]) await createPod(c, `${ex.file.replace(/\W/g, '-')}-${i}`, NODE);
    for (const init of pod.initContainers ?? []) {
      const run = runToEnd(init, volumes, downward);
      expect(run.code, `${init.name}: ${run.out}${run.err}`).to.equal(0);
    }
    const main = pod.containers.find((x) => x.name === 'pool-monitor')!;
    const mounts = mountsOf(main, volumes);
    const mainEnv = envOf(main, downward, mounts);
    const argv = commandOf(main, mainEnv, mounts);
    expect(argv.slice(0, 2)).to.deep.equal(['bin/pool-monitor', 'sidecar']);
    sidecar = spawnSidecar(argv.slice(2), {
      ...mainEnv,
      KUBECONFIG: await c.strict!.kubeconfigFile('sidecar', NODE),
    });
    // Ready as the kubelet sees it: the readiness probe of the manifest.
    const probe = main.readinessProbe!.httpGet;
    await waitFor(
      'the readiness probe',
      async () =>
        (await fetch(`http://${probe.host}:${probe.port}${probe.path}`).catch(() => undefined))
          ?.status === 200,
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; sidecar: ${sidecar!.lines.slice(-5).join('\n')} ${sidecar!.stderr()}`);
    });
    token = readFileSync(tree.host('/run/pool-monitor/node-api-token'), 'utf8').trim();
  });

  after(async () => {
    if (sidecar && sidecar.child.exitCode === null) {
      sidecar.child.kill('SIGTERM');
      await sidecar.exited;
    }
    killStraySidecars();
    await c?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('serves the node API where the plugin looks by default: a socket, and a token only root reads on the host', () => {
    expect(statSync(sock()).isSocket()).to.equal(true);
    const host = statSync(tree.host('/run/pool-monitor/node-api-token'));
    expect({ mode: host.mode & 0o7777, uid: host.uid }).to.deep.equal({ mode: 0o600, uid: 0 });
    // The sidecar (65532) reads its own copy and creates its socket in a directory it cannot empty of the token.
    const copy = statSync(join(volumes.get('token')!, 'node-api-token'));
    expect({ mode: copy.mode & 0o7777, uid: copy.uid }).to.deep.equal({ mode: 0o400, uid: 65532 });
    const dir = statSync(tree.host('/run/pool-monitor'));
    expect({ mode: dir.mode & 0o7777, uid: dir.uid, gid: dir.gid }).to.deep.equal({
      mode: 0o1770,
      uid: 0,
      gid: 65532,
    });
    expect(readFileSync(join(volumes.get('token')!, 'node-api-token'), 'utf8').trim()).to.equal(token);
    // And the plugin's defaults are these paths (cni-plugin/internal/plugin/config.go).
    const config = readFileSync(join(REPO, 'cni-plugin/internal/plugin/config.go'), 'utf8');
    expect(config).to.match(/defaultNodeAPI\s+= "unix:\/run\/pool-monitor\/cns\.sock"/);
    expect(config).to.match(/defaultTokenFile = "\/run\/pool-monitor\/node-api-token"/);
  });

  for (const ex of examples()) {
    it(`${ex.file}: ADD, CHECK, STATUS, GC and DEL against the DaemonSet's sidecar`, async () => {
      const [a, b] = [1, 2].map((i) => `${ex.file.replace(/\W/g, '-')}-${i}`) as [string, string];
      const stdin = (extra: object = {}, valid?: { containerID: string; ifname: string }[]) => ({
        ...(JSON.parse(libcniConf(ex.list, ex.entry, valid)) as object),
        ...extra,
      });
      const ips: string[] = [];
      const results: Record<string, unknown>[] = [];
      for (const ctr of [a, b]) {
        const add = await plugin(env('ADD', ctr), stdin());
        expect(add.code, add.out).to.equal(0);
        expect(add.json).to.have.property('cniVersion', ex.list.cniVersion);
        results.push(add.json!);
        ips.push((add.json!.ips as { address: string }[])[0]!.address.split('/')[0]!);
        expect(await stateOf(ips.at(-1)!)).to.equal('Assigned');
      }
      const check = await plugin(env('CHECK', a), stdin({ prevResult: results[0] }));
      expect(check, check.out).to.deep.include({ code: 0, out: '' });
      if (ex.list.cniVersion === '1.1.0') {
        const status = await plugin({ CNI_COMMAND: 'STATUS' }, stdin());
        expect(status, status.out).to.deep.include({ code: 0, out: '' });
        const gc = await plugin({ CNI_COMMAND: 'GC' }, stdin({}, [{ containerID: a, ifname: 'eth0' }]));
        expect(gc, gc.out).to.deep.include({ code: 0, out: '' });
        expect(await stateOf(ips[1]!)).to.equal('Available');
        expect(await stateOf(ips[0]!)).to.equal('Assigned');
      } else {
        // A runtime sends GC and STATUS from 1.1.0 only; the address goes by DEL.
        const del = await plugin(env('DEL', b), stdin());
        expect(del, del.out).to.deep.include({ code: 0, out: '' });
      }
      const del = await plugin(env('DEL', a), stdin());
      expect(del, del.out).to.deep.include({ code: 0, out: '' });
      for (const ip of ips) expect(await stateOf(ip), ip).to.equal('Available');
    });
  }

  it('a host token group or others can read is refused with a clear error, and nothing is assigned', async () => {
    const file = tree.host('/run/pool-monitor/node-api-token');
    chmodSync(file, 0o644);
    try {
      const ex = examples().find((e) => e.file === 'bare')!;
      const add = await plugin(env('ADD', 'open-token'), JSON.parse(libcniConf(ex.list, ex.entry)));
      expect(add.code).to.equal(1);
      expect(add.json).to.deep.equal({
        cniVersion: '1.1.0',
        code: 7,
        msg: 'invalid network configuration: ipam.tokenFile /run/pool-monitor/node-api-token is open to group or others (mode 0644): the node API token must be its owner\'s only (chmod 600 /run/pool-monitor/node-api-token)',
      });
    } finally {
      chmodSync(file, 0o600);
    }
    const res = await overSocket(sock(), token, 'POST', '/debug/ipaddresses', {
      IPConfigStateFilter: ['Assigned'],
    });
    expect(res.json.IPConfigurationStatus).to.deep.equal([]);
  });

  it("writes the README's conflist byte for byte, by rename, beside what was there", () => {
    const written = readFileSync(tree.host(`/etc/cni/net.d/${conflistName}`), 'utf8');
    expect(written).to.equal(documentedConflist());
    expect(written).to.equal(readFileSync(join(EXAMPLES, 'macvlan.conflist'), 'utf8'));
    expect(readdirSync(tree.host('/etc/cni/net.d')).sort()).to.deep.equal([
      '.pool-monitor-installed',
      conflistName,
      '99-other.conflist',
    ]);
    // The overlay changes it: a reader of the old file keeps reading the old
    // bytes, the name now opens the new ones (a rename, not a rewrite).
    const path = tree.host(`/etc/cni/net.d/${conflistName}`);
    const fd = openSync(path, 'r');
    try {
      const cm = join(volumes.get('cni-conflist')!, conflistName);
      writeFileSync(cm, written.replace('"eth0"', '"bond0"'));
      const init = pod.initContainers!.find((x) => x.name === 'host-setup')!;
      const again = runToEnd(init, volumes, downward);
      expect(again.code, again.err).to.equal(0);
      expect(again.out).to.contain(`wrote ${path}`);
      const old = Buffer.alloc(written.length + 16);
      expect(old.toString('utf8', 0, readSync(fd, old, 0, old.length, 0))).to.equal(written);
      expect(readFileSync(path, 'utf8')).to.contain('"bond0"');
    } finally {
      closeSync(fd);
    }
    token = readFileSync(tree.host('/run/pool-monitor/node-api-token'), 'utf8').trim();
  });

  it('the TCP overlay serves the node API as CNS does: 127.0.0.1:10092, no token', () => {
    const tcp = podOf(render(kubectl, join(REPO, 'manifests/node-api-tcp')), 'DaemonSet', 'pool-monitor');
    const envOfMain = (p: PodSpec) => p.containers.find((x) => x.name === 'pool-monitor')!.env!;
    expect(envOfMain(tcp).filter((e) => e.name.startsWith('POOL_MONITOR_'))).to.deep.equal([
      { name: 'POOL_MONITOR_LISTEN', value: '127.0.0.1:10092' },
      { name: 'POOL_MONITOR_METRICS_LISTEN', value: '$(HOST_IP):10094' },
    ]);
    expect(envOfMain(pod).filter((e) => e.name.startsWith('POOL_MONITOR_'))).to.deep.equal([
      { name: 'POOL_MONITOR_LISTEN', value: 'unix:/run/pool-monitor/cns.sock' },
      { name: 'POOL_MONITOR_NODE_API_TOKEN_FILE', value: '/run/secrets/pool-monitor/node-api-token' },
      { name: 'POOL_MONITOR_METRICS_LISTEN', value: '$(HOST_IP):10094' },
    ]);
  });

  it('the cleanup DaemonSet leaves nothing of it on the node, and the other network its configuration', async () => {
    sidecar!.child.kill('SIGTERM');
    expect((await sidecar!.exited).code).to.equal(0);
    const cleanup = podOf(render(kubectl, join(REPO, 'manifests/cleanup')), 'DaemonSet', 'pool-monitor-cleanup');
    const nodeVolumes = tree.volumes(cleanup, []);
    for (const init of cleanup.initContainers ?? []) {
      const run = runToEnd(init, nodeVolumes, downward);
      expect(run.code, `${init.name}: ${run.out}${run.err}`).to.equal(0);
    }
    for (const path of [
      '/var/lib/pool-monitor',
      '/run/pool-monitor',
      `/etc/cni/net.d/${conflistName}`,
      '/etc/cni/net.d/.pool-monitor-installed',
      '/opt/cni/bin/pool-monitor-cni',
    ])
      expect(existsSync(tree.host(path)), path).to.equal(false);
    expect(readdirSync(tree.host('/etc/cni/net.d'))).to.deep.equal(['99-other.conflist']);
  });
});
