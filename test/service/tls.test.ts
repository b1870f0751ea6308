/**
 * HTTPS (issue 11 item 4): HILT_TLS_CERT and HILT_TLS_KEY make the service serve HTTPS directly;
 * a start on an address other than the loopback without them warns.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { makeCertificate } from '../helpers/redfish-sim';
import { startServerProcess } from '../helpers/process';
import { hilt } from '../helpers/cli';
import { DEFAULTS, isLoopback, loadConfig, plainHttpWarning } from '../../src/config';

function get(url: string, ca: Buffer | undefined, auth: string): Promise<{ status: number; body: string }> {
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
