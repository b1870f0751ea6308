/**
 * TLS as the HTTP drivers (Redfish BMCs, REST switches) use it: a device's `ca_cert` checked at
 * registration, and a refused certificate explained in words that say what to set.
 */
import { X509Certificate } from 'node:crypto';

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Why a certificate was refused, by the TLS stack's error code. */
export const TLS_CODES: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'it is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its chain ends in an untrusted self-signed CA',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'no trusted CA signed it',
  UNABLE_TO_GET_ISSUER_CERT: 'no trusted CA signed it',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'no trusted CA signed it',
  CERT_UNTRUSTED: 'it is not trusted',
  CERT_SIGNATURE_FAILURE: 'its signature does not verify',
  CERT_HAS_EXPIRED: 'it has expired',
  CERT_NOT_YET_VALID: 'it is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'it does not name this host',
};

/** What is wrong with a `ca_cert` (PEM text holding one or more certificates), or null. */
export function caCertProblem(ca: unknown): string | null {
  if (typeof ca !== 'string') return 'ca_cert must be a PEM string';
  const blocks = ca.match(PEM_CERT);
  if (!blocks) return 'ca_cert must hold at least one PEM certificate (-----BEGIN CERTIFICATE-----)';
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (e) {
      return `ca_cert holds a certificate that does not parse: ${(e as Error).message}`;
    }
  }
  return null;
}
