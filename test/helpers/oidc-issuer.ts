/**
 * An OpenID Connect issuer for tests: HTTPS on 127.0.0.1 (port 0) with a certificate signed by a
 * test CA made here with openssl, serving a discovery document and a JWK set whose keys can be
 * rotated, and signing tokens with jose. Closed by the root after-hook.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type KeyLike, type JWTPayload } from 'jose';

const run = promisify(execFile);

export interface SigningKey { kid: string; alg: 'RS256' | 'ES256'; privateKey: KeyLike; jwk: JWK }

export interface TestIssuer {
  /** `https://127.0.0.1:PORT` */
  url: string;
  /** the test CA's certificate (PEM file): HILT_OIDC_CA_FILE */
  caFile: string;
  /** keys the JWK set publishes */
  published: SigningKey[];
  /** requests for the JWK set so far */
  jwksFetches: number;
  /** When set, answers the JWK set's requests instead (counted still): an issuer slow, down or answering garbage. */
  jwksAnswer?: (res: ServerResponse) => void;
  newKey(alg?: 'RS256' | 'ES256', kid?: string): Promise<SigningKey>;
  /** A signed token: `iss`, `aud`, `iat`, `exp` (in 5 minutes) unless `claims` says otherwise. */
  token(key: SigningKey, claims: JWTPayload, header?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** A CA and a server certificate it signs, for 127.0.0.1 and localhost. */
async function certificates(dir: string): Promise<{ caFile: string; keyFile: string; certFile: string }> {
  const f = (n: string) => join(dir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', f('ca-key.pem'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=hilt test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  await run('openssl', ['req', ...ec, '-keyout', f('key.pem'), '-out', f('req.pem'), '-subj', '/CN=hilt test issuer']);
  writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n');
  await run('openssl', ['x509', '-req', '-in', f('req.pem'), '-CA', f('ca.pem'), '-CAkey', f('ca-key.pem'), '-CAcreateserial',
    '-out', f('cert.pem'), '-days', '2', '-extfile', f('ext.cnf')]);
  return { caFile: f('ca.pem'), keyFile: f('key.pem'), certFile: f('cert.pem') };
}

const open: TestIssuer[] = [];

export async function startIssuer(audience = 'hilt'): Promise<TestIssuer> {
  const dir = mkdtempSync(join(tmpdir(), 'hilt-oidc-'));
  const { caFile, keyFile, certFile } = await certificates(dir);
  let url = '';
  const issuer: TestIssuer = {
    url: '', caFile, published: [], jwksFetches: 0,
    async newKey(alg = 'RS256', kid = `k${Math.random().toString(36).slice(2, 10)}`) {
      const { privateKey, publicKey } = await generateKeyPair(alg);
      return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
    },
    token(key, claims, header = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: url, aud: audience, iat: now, exp: now + 300, ...claims })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
        .sign(key.privateKey);
    },
    close: async () => {
      // Connections still open (an answer a test keeps dripping) are cut, not waited for.
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await closed;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const server: Server = createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (req, res) => {
    const send = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/.well-known/openid-configuration') return send({ issuer: url, jwks_uri: `${url}/jwks`, id_token_signing_alg_values_supported: ['RS256', 'ES256'] });
    if (req.url === '/jwks') {
      issuer.jwksFetches++;
      if (issuer.jwksAnswer) return issuer.jwksAnswer(res);
      return send({ keys: issuer.published.map((k) => k.jwk) });
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  issuer.url = url;
  open.push(issuer);
  return issuer;
}

after(async () => {
  for (const i of open.splice(0)) await i.close().catch(() => undefined);
});
