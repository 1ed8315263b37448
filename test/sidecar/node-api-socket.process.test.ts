// The real `bin/pool-monitor sidecar` with the node API locked down:
// --listen unix:PATH --listen-group GID --node-api-token-file FILE, against
// the local API server with RBAC and the sidecar's own token. The socket is
// 0660 with the group; an IPAM call without the token is refused (401) and
// changes nothing, with it the pod gets its IP; SIGTERM removes the socket
// and the process exits 0.
import { expect } from 'chai';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  killStraySidecars,
  logLines,
  spawnSidecar,
  startCluster,
  tempDir,
  waitFor,
  type Cluster,
} from './harness.ts';
import { overSocket } from '../support/socket-sidecar.ts';

const TOKEN = 'node-api-token-for-the-process-test';

/** A JSON request over the socket: POST with a body, GET without; no token, no credentials. */
const call = (sock: string, path: string, body: unknown, token?: string) =>
  overSocket(sock, token, body === undefined ? 'GET' : 'POST', path, body);

describe('bin/pool-monitor sidecar: node API on a unix socket with a token (process)', function () {
  this.timeout(30_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  before(async () => {
    c = await startCluster();
    dir = tempDir();
  });
  after(async () => {
    killStraySidecars();
    dir?.remove();
    await c?.close();
  });

  it('serves the CNI over the socket with the token only, and removes the socket on SIGTERM', async () => {
    const node = 'sock-node';
    await createNnc(
      c,
      node,
      { requestedIPCount: 4 },
      { scaler: DEFAULT_SCALER, networkContainers: [container([0, 1, 2, 3])] },
    );
    await createPod(c, 'sock-pod', node);
    const kubeconfig = await c.strict!.kubeconfigFile('sidecar', node);
    const sock = join(dir.path, 'run', 'cns.sock');
    const tokenFile = join(dir.path, 'node-api-token');
    writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
    const p = spawnSidecar(
      [
        ...['--kubeconfig', kubeconfig, '--state-dir', join(dir.path)],
        ...['--listen', `unix:${sock}`, '--listen-group', '4321'],
        ...['--node-api-token-file', tokenFile],
      ],
      { NODENAME: node },
    );
    await p.listening;
    const st = statSync(sock);
    expect((st.mode & 0o777).toString(8)).to.equal('660');
    expect(st.gid).to.equal(4321);
    await waitFor('ready', async () => (await call(sock, '/readyz', undefined)).status === 200);
    const ask = {
      podInterfaceID: 'sock-iface',
      infraContainerID: 'sock-infra',
      orchestratorContext: { PodName: 'sock-pod', PodNamespace: 'default' },
      desiredIPAddresses: [],
    };
    const refused = await call(sock, '/network/requestipconfigs', ask);
    expect(refused.status).to.equal(401);
    const list = { IPConfigStateFilter: ['Assigned'] };
    const none = await call(sock, '/debug/ipaddresses', list, TOKEN);
    expect(none.json.IPConfigurationStatus).to.deep.equal([]);
    const got = await call(sock, '/network/requestipconfigs', ask, TOKEN);
    expect(got.status, JSON.stringify(got.json)).to.equal(200);
    expect((got.json.response as { ReturnCode: number }).ReturnCode).to.equal(0);
    const one = await call(sock, '/debug/ipaddresses', list, TOKEN);
    expect(one.json.IPConfigurationStatus).to.have.length(1);
    expect((await call(sock, '/debug/ipaddresses', list)).status).to.equal(401);
    expect(logLines(p, 'sidecar started')[0]).to.include({
      listen: `unix:${sock}`,
      nodeApiToken: true,
    });
    expect(p.lines.join('\n')).not.to.contain(TOKEN);
    p.child.kill('SIGTERM');
    const { code } = await p.exited;
    expect(code).to.equal(0);
    expect(existsSync(sock)).to.equal(false);
    expect((statSync(dir.path).mode & 0o777).toString(8)).to.equal('700');
    expect((statSync(join(dir.path, 'ipstore.db')).mode & 0o777).toString(8)).to.equal('600');
  });
});
