/**
 * HTTPS (issue 11 item 4): HILT_TLS_CERT and HILT_TLS_KEY make the service serve HTTPS directly;
 * a start on an address other than the loopback without them warns, a standby's too.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { makeCertificate } from '../../helpers/redfish-sim';
import { startServerProcess } from '../../helpers/process';
import { hilt } from '../../helpers/cli';
import { freshDatabase } from '../../helpers/postgres';
import { DEFAULTS, isLoopback, loadConfig, plainHttpWarning } from '../../../src/config';

function get(url: string, ca: Buffer | undefined, auth = ''): Promise<{ status: number; body: string }> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers: { authorization: 'Basic ' + Buffer.from(auth).toString('base64') } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HTTPS', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-tls-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves HTTPS with HILT_TLS_CERT and HILT_TLS_KEY; the CLI and HIL-style clients reach it with the CA trusted', async () => {
    const { keyFile, certFile } = await makeCertificate(dir, 'hilt');
    const p = await startServerProcess({
      HILT_DATA_DIR: join(dir, 'data'), HILT_ADMIN_USER: 'root', HILT_ADMIN_PASSWORD: 'tls-root-pw', HILT_TLS_CERT: certFile, HILT_TLS_KEY: keyFile,
    });
    const url = p.url.replace('http:', 'https:');
    expect(p.output()).to.include(`"url":"${url}"`).and.to.include('"tls":true');
    const ca = readFileSync(certFile);
    const r = await get(`${url}/projects`, ca, 'root:tls-root-pw');
    expect(r).to.deep.equal({ status: 200, body: '[]' });
    // Not trusted without the CA; plain HTTP on that port gets no answer of the API.
    const untrusted = await get(`${url}/projects`, undefined, 'root:tls-root-pw').catch((e: Error) => e);
    expect(untrusted).to.be.instanceOf(Error);
    const plain = await get(`${p.url}/projects`, undefined, 'root:tls-root-pw').catch((e: Error) => e);
    expect(plain instanceof Error || plain.status === 400, String(plain)).to.equal(true);
    // The CLI, with the CA as node's extra CA.
    const cli = await hilt(url, ['project', 'create', 'over-tls'], { as: { user: 'root', password: 'tls-root-pw' }, env: { NODE_EXTRA_CA_CERTS: certFile } });
    expect(cli.code, cli.stderr).to.equal(0);
    expect((await get(`${url}/projects`, ca, 'root:tls-root-pw')).body).to.equal('["over-tls"]');
    // No warning on the loopback.
    expect(p.output()).to.not.include('plain HTTP');
    p.child.kill('SIGTERM');
    expect(await p.exited).to.equal(0);
  });

  it('a standby on PostgreSQL serves /health over HTTPS, and warns at its start when it listens off the loopback over plain HTTP', async () => {
    const { keyFile, certFile } = await makeCertificate(dir, 'standby');
    const ca = readFileSync(certFile);
    const db = { HILT_STORAGE: 'postgres', HILT_DATABASE_URL: await freshDatabase(), HILT_ADMIN_PASSWORD: 'tls-root-pw' };
    const active = await startServerProcess({ ...db, HILT_DATA_DIR: join(dir, 'pa'), HILT_INSTANCE_NAME: 'pa' });
    const secure = await startServerProcess({ ...db, HILT_DATA_DIR: join(dir, 'pb'), HILT_INSTANCE_NAME: 'pb', HILT_TLS_CERT: certFile, HILT_TLS_KEY: keyFile }, 30_000, /hilt is a standby/);
    // "127.1" is a name to hilt, which vouches only for the loopback's literal addresses and
    // `localhost`; the resolver makes it 127.0.0.1, so nothing leaves the loopback.
    const plain = await startServerProcess({ ...db, HILT_DATA_DIR: join(dir, 'pc'), HILT_INSTANCE_NAME: 'pc', HILT_HOST: '127.1' }, 30_000, /hilt is a standby/);

    const url = secure.url.replace('http:', 'https:');
    expect(secure.output()).to.include(`"url":"${url}"`).and.to.include('"tls":true');
    const health = await get(`${url}/health`, ca);
    expect(health.status).to.equal(503);
    expect(JSON.parse(health.body)).to.include({ status: 'standby', instance: 'pb' });
    expect((await get(`${url}/projects`, ca, 'admin:tls-root-pw')).status).to.equal(503);
    expect(secure.output()).to.not.include('plain HTTP');

    expect(plain.output()).to.match(/"host":"127\.1".*listening on 127\.1 over plain HTTP/);
    // Warned at its start, before it says it stands by (it never became active).
    expect(plain.output().indexOf('plain HTTP')).to.be.below(plain.output().indexOf('hilt is a standby'));
    expect(plain.output()).to.not.include('hilt is ready');
    expect(JSON.parse((await get(`${plain.url}/health`, undefined)).body)).to.include({ status: 'standby', instance: 'pc' });
    expect(active.output()).to.not.include('plain HTTP');
    for (const p of [plain, secure, active]) {
      p.child.kill('SIGTERM');
      expect(await p.exited).to.equal(0);
    }
  });

  it('refuses a key that is not the certificate\'s, or a file it cannot read, naming the setting and the file', async () => {
    const a = await makeCertificate(dir, 'pair-a');
    const b = await makeCertificate(dir, 'pair-b');
    const cases: [Record<string, string>, RegExp][] = [
      [{ HILT_TLS_CERT: a.certFile, HILT_TLS_KEY: b.keyFile }, /cannot serve HTTPS with HILT_TLS_CERT .*pair-a-cert\.pem and HILT_TLS_KEY .*pair-b-key\.pem: .*key values mismatch/],
      // The two swapped.
      [{ HILT_TLS_CERT: a.keyFile, HILT_TLS_KEY: a.certFile }, /cannot serve HTTPS with HILT_TLS_CERT .* and HILT_TLS_KEY .*: /],
      [{ HILT_TLS_CERT: join(dir, 'none.pem'), HILT_TLS_KEY: a.keyFile }, /cannot read HILT_TLS_CERT .*none\.pem: ENOENT/],
    ];
    for (const [env, message] of cases) {
      const p = await startServerProcess({ HILT_DATA_DIR: join(dir, 'bad-tls'), ...env }, {}, /failed to start|hilt is ready/);
      expect(p.output()).to.not.include('hilt is ready');
      expect(await p.exited).to.equal(1);
      expect(p.output()).to.match(new RegExp(`^hilt: failed to start: ${message.source}`, 'm'));
    }
  });

  it('refuses to start with only one of the two', () => {
    expect(() => loadConfig({ HILT_TLS_CERT: '/x.pem' })).to.throw(/go together/);
    expect(() => loadConfig({ HILT_TLS_KEY: '/x.pem' })).to.throw(/go together/);
    expect(loadConfig({ HILT_TLS_CERT: '/c.pem', HILT_TLS_KEY: '/k.pem' })).to.include({ tlsCert: '/c.pem', tlsKey: '/k.pem' });
  });

  it('warns when it listens off the loopback over plain HTTP, and only then', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopback(host), host).to.equal(true);
      expect(plainHttpWarning({ host, tlsCert: undefined }), host).to.equal(null);
    }
    // Names only: no address off the loopback is written in the tests (the wildcard is no host's).
    for (const host of ['hilt.example', 'control-plane.example.org', '0.0.0.0', '::']) {
      expect(isLoopback(host), host).to.equal(false);
      expect(plainHttpWarning({ host, tlsCert: undefined }), host).to.match(/in the clear.*HILT_TLS_CERT/);
      expect(plainHttpWarning({ host, tlsCert: '/c.pem' }), host).to.equal(null);
    }
    expect(DEFAULTS.host).to.equal('127.0.0.1');
  });
});
