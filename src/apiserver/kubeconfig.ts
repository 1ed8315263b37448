// The kubeconfig file the server writes for its clients. client-node needs
// `insecure-skip-tls-verify: true` to accept a plain-http server URL.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import YAML from 'yaml';

export function kubeconfigYaml(url: string, namespace = 'default'): string {
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'pool-monitor', cluster: { server: url, 'insecure-skip-tls-verify': true } },
    ],
    users: [{ name: 'pool-monitor', user: { token: 'local' } }],
    contexts: [
      {
        name: 'pool-monitor',
        context: { cluster: 'pool-monitor', user: 'pool-monitor', namespace },
      },
    ],
    'current-context': 'pool-monitor',
    preferences: {},
  });
}

export function writeKubeconfig(path: string, url: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, kubeconfigYaml(url), { mode: 0o600 });
}
