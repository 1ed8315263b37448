// The kubeconfig file the server writes for its clients. Over HTTPS the
// cluster carries the server's CA (certificate-authority-data); over plain
// HTTP client-node needs `insecure-skip-tls-verify: true` to accept the URL.
// The user is the server's admin token (group system:masters).
import YAML from 'yaml';
import { writePrivateFile } from '../../src/secrets/private-file.ts';

export interface KubeconfigOptions {
  /** PEM of the CA that signed an https server's certificate. */
  caPem?: string;
  /** Bearer token of the kubeconfig's user. */
  token?: string;
  namespace?: string;
}

export function kubeconfigYaml(url: string, opts: KubeconfigOptions | string = {}): string {
  const o: KubeconfigOptions = typeof opts === 'string' ? { namespace: opts } : opts;
  const cluster: Record<string, unknown> = { server: url };
  if (o.caPem !== undefined)
    cluster['certificate-authority-data'] = Buffer.from(o.caPem).toString('base64');
  else if (url.startsWith('http:')) cluster['insecure-skip-tls-verify'] = true;
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'pool-monitor', cluster }],
    users: [{ name: 'pool-monitor', user: { token: o.token ?? 'local' } }],
    contexts: [
      {
        name: 'pool-monitor',
        context: {
          cluster: 'pool-monitor',
          user: 'pool-monitor',
          namespace: o.namespace ?? 'default',
        },
      },
    ],
    'current-context': 'pool-monitor',
    preferences: {},
  });
}

export function writeKubeconfig(path: string, url: string, opts: KubeconfigOptions = {}): void {
  // It carries the admin token: 0600 through a temp file and a rename.
  writePrivateFile(path, kubeconfigYaml(url, opts));
}
