/** hilt node … against a started server: tables, --json, and what each command changed. */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, mockSwitch, MOCK_OBM, IPMI_OBM } from '../../helpers/server';
import { cliFor, rows } from '../../helpers/cli';
import { startRedfishSim } from '../../helpers/redfish-sim';

const REDFISH_OBM = 'http://schema.massopencloud.org/haas/v0/obm/redfish';

describe('hilt node', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
  });
  after(() => stopTestServer(ts));

  it('register (HIL\'s ipmi|mock form, and a full type identifier) and delete', async () => {
    const r = await cli.run('node', 'register', 'n1', 'mock', 'bmc1', 'ipmiuser', 'bmc-pass');
    expect(r.code).to.equal(0);
    expect(r.stdout).to.equal('');
    expect(r.stderr, 'a password on the command line is warned about').to.match(/warning: the BMC password of n1 is on the command line/);
    expect((await must(api.get('/admin/actors/node/n1'))).body.state.obm).to.deep.include({ type: MOCK_OBM });
    await cli.as({ input: 'ipmi-secret\n' })('node', 'register', 'n2', IPMI_OBM, '127.0.0.1', 'ipmiuser', '-');
    expect((await must(api.get('/admin/actors/node/n2'))).body.state.obm).to.deep.equal({ type: IPMI_OBM, fields: { host: '127.0.0.1', user: 'ipmiuser', password: '[redacted]' } });
    expect(await cli.ok('node', 'delete', 'n2')).to.equal('');
    expect((await api.get('/node/n2')).status).to.equal(404);
  });

  it('register redfish with --system and --ca-cert (read from its file), then powers the node through it; --no-verify-tls', async () => {
    const sim = await startRedfishSim({ user: 'rfuser', password: 'redfish-secret-pw', systems: ['1', '2'] });
    try {
      const r = await cli.as({ input: 'redfish-secret-pw\n' })('node', 'register', 'rf1', 'redfish', sim.url, 'rfuser', '-', '--system', '/redfish/v1/Systems/2', '--ca-cert', sim.certFile);
      expect(r.code, r.stderr).to.equal(0);
      const obm = (await must(api.get('/admin/actors/node/rf1'))).body.state.obm;
      expect(obm.type).to.equal(REDFISH_OBM);
      expect(obm.fields).to.deep.include({ host: sim.url, user: 'rfuser', system: '/redfish/v1/Systems/2', ca_cert: sim.certPem });
      expect(await cli.json('node', 'power', 'status', 'rf1')).to.deep.equal({ power_status: 'off' });
      await cli.ok('node', 'power', 'on', 'rf1');
      expect(sim.system('2').PowerState).to.equal('On');
      expect(sim.system('1').PowerState, 'the other system is left alone').to.equal('Off');
      await cli.as({ input: 'redfish-secret-pw\n' })('node', 'register', 'rf2', 'redfish', sim.url, 'rfuser', '-', '--system', '/redfish/v1/Systems/1', '--no-verify-tls');
      expect((await must(api.get('/admin/actors/node/rf2'))).body.state.obm.fields).to.deep.include({ verify_tls: false });
      expect(await cli.json('node', 'power', 'status', 'rf2')).to.deep.equal({ power_status: 'off' });
      const missing = await cli.run('node', 'register', 'rf3', 'redfish', sim.url, 'rfuser', 'redfish-secret-pw', '--ca-cert', '/nonexistent/ca.pem');
      expect(missing.code, 'an unreadable file is a usage error').to.equal(2);
      expect((await api.get('/node/rf3')).status).to.equal(404);
      for (const n of ['rf1', 'rf2']) await cli.ok('node', 'delete', n);
    } finally {
      await sim.stop();
    }
  });

  it('list free|all: a table of nodes (test/src/cli/lists.test.ts: its columns), or the server\'s JSON', async () => {
    const reg = await cli.as({ input: 'pw3\n' })('node', 'register', 'n3', 'mock', 'bmc3', 'u', '-');
    expect(reg.code).to.equal(0);
    expect(reg.stderr, 'a password read from stdin is not warned about').to.equal('');
    expect(rows(await cli.ok('node', 'list', 'all')).map((r) => r[0])).to.deep.equal(['Node', 'n1', 'n3']);
    await must(api.put('/project/p'));
    await must(api.post('/project/p/connect_node', { node: 'n3' }));
    expect(rows(await cli.ok('node', 'list', 'free')).map((r) => r[0])).to.deep.equal(['Node', 'n1']);
    const r = await cli.run('node', 'list', 'free', '--json');
    expect(r.stdout).to.equal(`${(await api.get('/nodes/free')).text}\n`);
  });

  it('nic register and delete; show: nics, wiring for admins, networks, metadata', async () => {
    await cli.ok('node', 'nic', 'register', 'n1', 'eth0', 'aa:bb:cc:dd:ee:ff');
    await cli.ok('node', 'nic', 'register', 'n1', 'eth1', '11:22:33:44:55:66');
    await must(api.put('/switch/s1', mockSwitch));
    await must(api.put('/switch/s1/port/gi1/0/1'));
    await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await cli.ok('node', 'metadata', 'add', 'n1', 'rack', 'r12');
    const table = rows(await cli.ok('node', 'show', 'n1'));
    expect(table[0]).to.deep.equal(['Field', 'Value']);
    expect(table).to.deep.include.members([['Project', 'None'], ['Name', 'n1'], ['Label', 'eth0'], ['Macaddr', 'aa:bb:cc:dd:ee:ff'], ['Switch', 's1'], ['Port', 'gi1/0/1'],
      ['Networks', 'None'], ['Label', 'eth1'], ['rack', 'r12']]);
    expect(await cli.json('node', 'show', 'n1')).to.deep.equal((await api.get('/node/n1')).body);
    await cli.ok('node', 'nic', 'delete', 'n1', 'eth1');
    expect((await api.get('/node/n1')).body.nics.map((n: { label: string }) => n.label)).to.deep.equal(['eth0']);
  });

  it('show to a project member: no wiring rows, as the server gives none', async () => {
    const member = await makeUser(api, 'pm', 'pm-pw', ['p']);
    await cli.ok('node', 'nic', 'register', 'n3', 'eth0', 'mac3');
    const table = rows((await cli.as({ as: member })('node', 'show', 'n3')).stdout);
    expect(table).to.deep.include.members([['Project', 'p'], ['Label', 'eth0']]);
    expect(table.map((r) => r[0])).to.not.include.members(['Switch', 'Port']);
  });

  it('metadata add replaces a value, delete removes it (as text, as HIL\'s CLI sent it)', async () => {
    await cli.ok('node', 'metadata', 'add', 'n1', 'unit', '12');
    await cli.ok('node', 'metadata', 'add', 'n1', 'rack', 'r13');
    expect((await api.get('/node/n1')).body.metadata).to.deep.equal({ rack: 'r13', unit: '12' });
    await cli.ok('node', 'metadata', 'delete', 'n1', 'unit');
    expect((await api.get('/node/n1')).body.metadata).to.deep.equal({ rack: 'r13' });
    const r = await cli.run('node', 'metadata', 'delete', 'n1', 'unit');
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/NotFoundError: metadata unit of node n1 does not exist/);
  });

  it('power cycle, off and status (table and JSON); on and bootdev call the server\'s calls or say it lacks them', async () => {
    await cli.ok('node', 'power', 'cycle', 'n1');
    expect(rows(await cli.ok('node', 'power', 'status', 'n1'))).to.deep.equal([['Field', 'Value'], ['Power Status', 'on']]);
    await cli.ok('node', 'power', 'off', 'n1');
    expect(await cli.json('node', 'power', 'status', 'n1')).to.deep.equal({ power_status: 'off' });
    await cli.ok('node', 'power', 'cycle', '--force', 'n1');
    expect((await api.get('/admin/actors/node/n1')).body.mockBmc).to.include({ power: 'on' });
    for (const [args, call] of [[['node', 'power', 'on', 'n1'], 'POST /node/n1/power_on'], [['node', 'bootdev', 'n1', 'pxe'], 'PUT /node/n1/boot_device']] as const) {
      const route = call.replace('/n1/', '/:node/').split(' ');
      const r = await cli.run(...args);
      if (ts.app.hasRoute({ method: route[0] as 'POST', url: route[1] })) {
        expect(r.code, r.stderr).to.equal(0);
      } else {
        expect(r.code).to.equal(1);
        expect(r.stderr).to.include(`does not offer ${call}`);
        expect(r.stdout).to.equal('');
      }
    }
  });
});
