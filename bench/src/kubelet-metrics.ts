/**
 * The kubelet's /metrics page, read from its own HTTPS port on loopback (the API server's node
 * proxy refuses loopback addresses), as scripts/kube-node.sh configures it: the port in
 * `<dir>/kubelet-config.yaml`, its self-signed certificate `<dir>/pki/kubelet.crt` trusted as the
 * CA, anonymous access allowed.
 */
import { readFile } from 'node:fs/promises';
import { get } from 'node:https';
import { join } from 'node:path';

export async function kubeletMetricsReader(nodeDir: string): Promise<() => Promise<string>> {
  const config = await readFile(join(nodeDir, 'kubelet-config.yaml'), 'utf8');
  const port = /^port:\s*(\d+)\s*$/m.exec(config)?.[1];
  if (port === undefined) throw new Error(`no port in ${join(nodeDir, 'kubelet-config.yaml')}`);
  const ca = await readFile(join(nodeDir, 'pki', 'kubelet.crt'));
  return () =>
    new Promise((resolve, reject) => {
      const req = get({ host: '127.0.0.1', port: Number(port), path: '/metrics', ca, servername: 'localhost' }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`kubelet /metrics: HTTP ${res.statusCode}: ${text.slice(0, 300)}`))));
        res.on('error', reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error('kubelet /metrics: no answer within 30 s')));
      req.on('error', reject);
    });
}
