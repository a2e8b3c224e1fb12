import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';

export const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
export const CERTS_DIR = '/etc/containers/certs.d';

export interface TlsMaterial {
  ca: string[];
  cert?: string;
  key?: string;
}

export interface TlsSources {
  caBundlePath: string;
  certsDir: string;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Trust anchors and client certificate for `host` (host[:port]), laid out as containers-certs.d(5) says:
 * certs.d/<host>/*.crt are extra CAs; a <name>.cert with its <name>.key is the client certificate.
 * The system bundle is read rather than Node's built-in list so that operator-installed CAs count.
 */
export async function loadTlsMaterial(sources: TlsSources, host: string): Promise<TlsMaterial> {
  const system = await readIfExists(sources.caBundlePath);
  const ca = system !== undefined ? [system] : [...rootCertificates];
  const material: TlsMaterial = { ca };
  const dir = join(sources.certsDir, host);
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return material;
    throw err;
  }
  for (const name of names) {
    if (name.endsWith('.crt')) ca.push(await readFile(join(dir, name), 'utf8'));
  }
  for (const name of names) {
    if (!name.endsWith('.cert')) continue;
    const keyName = `${name.slice(0, -'.cert'.length)}.key`;
    if (!names.includes(keyName)) {
      throw new Error(`client certificate ${join(dir, name)} has no matching key ${join(dir, keyName)}`);
    }
    material.cert = await readFile(join(dir, name), 'utf8');
    material.key = await readFile(join(dir, keyName), 'utf8');
    break;
  }
  return material;
}
