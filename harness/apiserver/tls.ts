// The local API server's TLS material, made at start: a self-signed CA and a
// serving certificate it signs for 127.0.0.1 and localhost (ECDSA P-256, as
// kubeadm can make them). Clients trust the CA through the kubeconfig's
// certificate-authority-data, so nothing skips verification. Certificates
// come from @peculiar/x509 (it needs a Reflect metadata polyfill, loaded
// first) on Node's WebCrypto; loaded only when TLS is asked for.
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';

export interface TlsMaterial {
  /** PEM of the CA certificate (what the kubeconfig carries). */
  caPem: string;
  /** PEM of the serving certificate (SANs 127.0.0.1 and localhost). */
  certPem: string;
  /** PEM (PKCS#8) of the serving key. */
  keyPem: string;
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const DAY_MS = 86_400_000;

const serial = (): string => {
  const b = randomBytes(16);
  b[0] = (b[0] as number) & 0x7f; // positive
  return b.toString('hex');
};

/** A fresh CA and serving certificate valid from a minute ago for `days` days. */
export async function makeTlsMaterial(
  opts: { days?: number; now?: Date; hosts?: { ips: string[]; dns: string[] } } = {},
): Promise<TlsMaterial> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const now = opts.now ?? new Date();
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime() + (opts.days ?? 365) * DAY_MS);
  const hosts = opts.hosts ?? { ips: ['127.0.0.1'], dns: ['localhost'] };
  const subtle = webcrypto.subtle;
  const caKeys = (await subtle.generateKey(ALGORITHM, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=pool-monitor-apiserver-ca',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = (await subtle.generateKey(ALGORITHM, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: 'CN=pool-monitor-apiserver',
    issuer: ca.subject,
    notBefore,
    notAfter,
    signingKey: caKeys.privateKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...hosts.ips.map((value) => ({ type: 'ip' as const, value })),
        ...hosts.dns.map((value) => ({ type: 'dns' as const, value })),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const pkcs8 = Buffer.from(await subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
    .export({ format: 'pem', type: 'pkcs8' })
    .toString();
  return { caPem: ca.toString('pem'), certPem: cert.toString('pem'), keyPem };
}
