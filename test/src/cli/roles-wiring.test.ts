/**
 * The command line's side of identity's roles and of the switch work: an auditor made and shown,
 * a reader added to a project, a role set (docs/identity.md); a REST switch over HTTPS registered
 * with its CA from a file, or without checking its certificate; the wiring check of one switch,
 * every switch, and its proposals (docs/switch-ports.md).
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch } from '../../helpers/server';
import { cliFor, rows } from '../../helpers/cli';
import { REST_CASES, restSimFor } from '../../helpers/rest-switch-sims';

describe('hilt user roles, switch register over HTTPS, admin wiring', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  let dir: string;
  before(async () => {
    ts = await startTestServer({ switchTimeoutMs: 10_000 });
    api = ts.api;
    cli = cliFor(ts.url);
    dir = mkdtempSync(join(tmpdir(), 'hilt-cli-roles-'));
    await must(api.put('/project/rp'));
    await makeNode(api, 'rn1', ['eth0']);
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(dir, { recursive: true, force: true });
  });

  describe('roles', () => {
    const auditor = { user: 'cli-auditor', password: 'cli-auditor-pw-1' };
    const reader = { user: 'cli-reader', password: 'cli-reader-pw-1' };

    it('user create … auditor: reads what an admin reads, changes nothing; user show says so', async () => {
      await cli.as({ input: `${auditor.password}\n` })('user', 'create', auditor.user, '-', 'auditor');
      const as = cli.as({ as: auditor });
      expect(rows((await as('project', 'list')).stdout)).to.deep.include(['rp']);
      const refused = await as('project', 'create', 'cli-new');
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.match(/403|Forbidden/i);
      expect((await api.get('/project/cli-new/nodes')).status, 'nothing made').to.equal(404);
      expect(await cli.json('user', 'show', auditor.user)).to.deep.include({ name: auditor.user, role: 'auditor', is_admin: false });
      expect(rows(await cli.ok('user', 'show', auditor.user))).to.deep.include(['Role', 'auditor']);
    });

    it('user project add --role reader: the project is read, not changed; user show lists it as reader', async () => {
      await cli.as({ input: `${reader.password}\n` })('user', 'create', reader.user, '-', 'regular');
      await cli.ok('user', 'project', 'add', reader.user, 'rp', '--role', 'reader');
      expect((await cli.json('user', 'show', reader.user)).projects).to.deep.equal({ rp: 'reader' });
      const as = cli.as({ as: reader });
      expect((await as('project', 'node', 'list', 'rp')).code).to.equal(0);
      const refused = await as('project', 'node', 'add', 'rp', 'rn1');
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.match(/403|Forbidden/i);
      expect((await cli.run('user', 'project', 'add', reader.user, 'rp', '--role', 'owner')).code, 'an unknown role').to.equal(2);
    });

    it('user set-role: auditor, user, admin', async () => {
      await cli.ok('user', 'set-role', reader.user, 'auditor');
      expect((await cli.json('user', 'show', reader.user)).role).to.equal('auditor');
      await cli.ok('user', 'set-role', reader.user, 'admin');
      expect((await cli.json('user', 'show', reader.user)).is_admin).to.equal(true);
      await cli.ok('user', 'set-role', reader.user, 'user');
      expect((await cli.json('user', 'show', reader.user)).role).to.equal('user');
      expect((await cli.run('user', 'set-role', reader.user, 'root')).code).to.equal(2);
    });
  });

  describe('a REST switch over HTTPS', () => {
    const os9 = REST_CASES.find((c) => c.vendor === 'dellnos9')!;

    it('switch register dellnos9 … --ca-cert FILE: the switch\'s certificate is checked against it', async () => {
      const sim = await restSimFor(os9);
      const ca = join(dir, 'os9.pem');
      writeFileSync(ca, sim.certPem);
      await cli.as({ input: `${sim.password}\n` })('switch', 'register', 'cli-os9', 'dellnos9', sim.url, sim.username, '-', os9.interfaceType, '--ca-cert', ca);
      await cli.ok('port', 'register', 'cli-os9', os9.ports[0]!);
      // The wiring check reads the switch: it needs the TLS handshake to succeed.
      const t = await cli.json('admin', 'wiring', 'cli-os9');
      expect(t.ports.map((p: { port: string }) => p.port)).to.deep.equal([os9.ports[0]]);
      const missing = await cli.run('switch', 'register', 'cli-os9b', 'dellnos9', sim.url, sim.username, '-', os9.interfaceType, '--ca-cert', join(dir, 'nope.pem'));
      expect(missing.code).to.equal(2);
      expect(missing.stderr).to.match(/nope\.pem/);
    });

    it('switch register dellnos9 … --no-verify-tls; without either, the certificate is refused', async () => {
      const sim = await restSimFor(os9);
      await cli.as({ input: `${sim.password}\n` })('switch', 'register', 'cli-os9c', 'dellnos9', sim.url, sim.username, '-', os9.interfaceType, '--no-verify-tls');
      await cli.ok('port', 'register', 'cli-os9c', os9.ports[0]!);
      expect((await cli.json('admin', 'wiring', 'cli-os9c')).summary).to.have.property('unseen', 1);
      await cli.as({ input: `${sim.password}\n` })('switch', 'register', 'cli-os9d', 'dellnos9', sim.url, sim.username, '-', os9.interfaceType);
      await cli.ok('port', 'register', 'cli-os9d', os9.ports[0]!);
      const refused = await cli.run('admin', 'wiring', 'cli-os9d');
      expect(refused.code, 'the switch cannot be read (502)').to.equal(3);
      expect(refused.stderr).to.match(/certificate/);
      // An SSH or mock switch has no such fields: refused, not dropped.
      const mock = await cli.run('switch', 'register', 'cli-mock', 'mock', 'h', 'u', 'mock-sw-pw', '--no-verify-tls');
      expect(mock.code).to.equal(1);
      expect(mock.stderr).to.match(/verify_tls/);
    });
  });

  describe('admin wiring', () => {
    before(async () => {
      await must(api.put('/switch/cw', mockSwitch));
      for (const p of ['gi1/0/1', 'gi1/0/2', 'gi1/0/3']) await must(api.put(`/switch/cw/port/${p}`));
      await makeNode(api, 'cw-a', ['eth0']);
      await makeNode(api, 'cw-b', ['eth0']);
      await must(api.put('/node/cw-a/nic/eth1', { macaddr: '52:54:00:00:0c:01' }));
      await must(api.put('/node/cw-b/nic/eth1', { macaddr: '52:54:00:00:0c:02' }));
      await must(api.post('/switch/cw/port/gi1/0/1/connect_nic', { node: 'cw-a', nic: 'eth1' }));
      await must(api.post('/switch/cw/port/gi1/0/2/connect_nic', { node: 'cw-b', nic: 'eth1' }));
      // a's cable is right; b's nic is seen on the unwired port 3, and 2 sees nothing
      ts.mockSwitch.learn('cw', 'gi1/0/1', { macs: ['52:54:00:00:0c:01'] });
      ts.mockSwitch.learn('cw', 'gi1/0/3', { macs: ['52:54:00:00:0c:02'] });
    });

    it('admin wiring SW: every port\'s nic, what the switch saw there and the verdict', async () => {
      const t = rows(await cli.ok('admin', 'wiring', 'cw'));
      const verdict = (port: string) => t.find((r) => r[1] === port)?.[3];
      expect([verdict('gi1/0/1'), verdict('gi1/0/2'), verdict('gi1/0/3')]).to.deep.equal(['ok', 'mismatch', 'unwired']);
      const j = await cli.json('admin', 'wiring', 'cw');
      expect(j.summary).to.deep.equal({ ok: 1, mismatch: 1, unseen: 0, unwired: 1 });
    });

    it('admin wiring (every switch): only the ports with problems, and the summary', async () => {
      const out = await cli.ok('admin', 'wiring');
      const t = rows(out).filter((r) => r[0] === 'cw');
      expect(t.map((r) => [r[1], r[3]])).to.deep.equal([['gi1/0/2', 'mismatch'], ['gi1/0/3', 'unwired']]);
      expect(out).to.match(/all switches: .*mismatch \d+/);
    });

    it('admin wiring SW --propose: the nic the switch\'s tables imply for an unwired port, never applied', async () => {
      const t = rows(await cli.ok('admin', 'wiring', 'cw', '--propose'));
      expect(t.find((r) => r[0] === 'gi1/0/3')?.[1]).to.equal('cw-b eth1 (52:54:00:00:0c:02)');
      expect((await must(api.get('/switch/cw/port/gi1/0/3'))).body, 'still unwired').to.deep.equal({});
      expect((await cli.run('admin', 'wiring', '--propose')).code, '--propose without a switch').to.equal(2);
    });
  });
});
