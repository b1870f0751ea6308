/** hilt switch … and hilt port … against a started server. */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, finished, MOCK_SWITCH, mockSwitch } from '../../helpers/server';
import { cliFor, rows } from '../../helpers/cli';

describe('hilt switch and hilt port', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
    await must(api.put('/project/p'));
    await makeNode(api, 'n1', ['eth0']);
  });
  after(() => stopTestServer(ts));

  it('switch register: HIL\'s "<subtype> <hostname> <username> <password>", or a type identifier and a JSON object', async () => {
    const r = await cli.run('switch', 'register', 's1', 'mock', 'sw1.example', 'admin', 'sw-pass');
    expect(r.code).to.equal(0);
    expect(r.stderr).to.match(/warning: the password of switch s1 is on the command line/);
    const info = JSON.stringify({ hostname: 'sw2.example', username: 'admin', password: 'p2' });
    expect((await cli.run('switch', 'register', 's2', MOCK_SWITCH, info)).code).to.equal(0);
    await cli.as({ input: 'p3\n' })('switch', 'register', 's3', 'mock', 'sw3.example', 'admin', '-');
    const s2 = (await must(api.get('/admin/actors/switch/s2'))).body.state;
    expect(s2).to.deep.include({ type: MOCK_SWITCH });
    expect(s2.fields).to.deep.equal({ hostname: 'sw2.example', username: 'admin', password: '[redacted]' });
    expect((await api.get('/switches')).body).to.have.members(['s1', 's2', 's3']);
  });

  it('switch register: the data-centre families dellos10, sonic, junos and cumulus_nvue with <hostname> <username> <password>', async () => {
    for (const t of ['dellos10', 'sonic', 'junos', 'cumulus_nvue']) {
      await cli.as({ input: `pw-${t}\n` })('switch', 'register', `dc-${t}`, t, '127.0.0.1:2201', 'admin', '-');
      const st = (await must(api.get(`/admin/actors/switch/dc-${t}`))).body.state;
      expect(st.type).to.equal(`http://schema.massopencloud.org/haas/v0/switches/${t}`);
      expect(st.fields).to.deep.equal({ hostname: '127.0.0.1:2201', username: 'admin', password: '[redacted]' });
      expect((await cli.run('switch', 'register', `dc2-${t}`, t, 'h', 'u')).code, 'three fields').to.equal(2);
      await must(api.del(`/switch/dc-${t}`));
    }
  });

  it('switch register: the REST families brocade and dellnos9 with <hostname> <username> <password> <interface_type>, as HIL\'s CLI', async () => {
    for (const [t, url] of [['brocade', 'https://127.0.0.1:8443'], ['dellnos9', 'https://127.0.0.1:8888']] as const) {
      expect((await cli.as({ input: `pw-${t}-rest\n` })('switch', 'register', `rest-${t}`, t, url, 'admin', '-', 'TenGigabitEthernet')).code).to.equal(0);
      const st = (await must(api.get(`/admin/actors/switch/rest-${t}`))).body.state;
      expect(st.type).to.equal(`http://schema.massopencloud.org/haas/v0/switches/${t}`);
      expect(st.fields).to.deep.equal({ hostname: url, username: 'admin', password: '[redacted]', interface_type: 'TenGigabitEthernet' });
      expect((await cli.run('switch', 'register', `rest2-${t}`, t, url, 'admin', 'pw')).code, 'three fields').to.equal(2);
      await must(api.del(`/switch/rest-${t}`));
    }
  });

  it('switch register refuses a wrong number of fields or malformed switchinfo as a usage error (2), calling nothing', async () => {
    for (const args of [['s4', 'mock', 'h', 'u'], ['s4', 'nexus', 'h', 'u', 'p'], ['s4', 'http://x/y', '{not json'], ['s4', 'http://x/y', '[1]']]) {
      const r = await cli.run('switch', 'register', ...args);
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stdout).to.equal('');
    }
    expect((await api.get('/switch/s4')).status).to.equal(404);
    const bad = await cli.run('switch', 'register', 's4', 'cisco', '{"hostname":"h"}');
    expect(bad.code, 'an unknown type is the server\'s 400').to.equal(1);
    expect(bad.stderr).to.match(/BadArgumentError/);
  });

  it('switch list, show, delete', async () => {
    const listed = rows(await cli.ok('switch', 'list'));
    expect(listed[0]).to.deep.equal(['Switch', 'Driver', 'Host', 'Ports', 'Health', 'Last Audit', 'Failing Ports']);
    expect(listed.slice(1), 'a row per switch: driver, host, ports and health (none used yet)').to.deep.equal(['s1', 's2', 's3'].map((s) => [s, 'mock', `${s.replace('s', 'sw')}.example`, '0 (0 wired)', 'unknown (not used yet)', 'never', '0']));
    expect((await cli.json('switch', 'list')).sort()).to.deep.equal(['s1', 's2', 's3']);
    await cli.ok('port', 'register', 's1', 'gi1/0/1');
    await cli.ok('port', 'register', 's1', 'gi1/0/2');
    expect(rows(await cli.ok('switch', 'show', 's1'))).to.deep.equal([['Field', 'Value'], ['Name', 's1'], ['Ports', 'gi1/0/1'], ['', 'gi1/0/2']]);
    expect(await cli.json('switch', 'show', 's2')).to.deep.equal({ name: 's2', ports: [] });
    await cli.ok('switch', 'delete', 's3');
    expect((await api.get('/switch/s3')).status).to.equal(404);
  });

  it('port register (names with /), nic add, show (table, --json, HIL\'s --jsonout), nic remove, delete', async () => {
    await cli.ok('port', 'nic', 'add', 's1', 'gi1/0/1', 'n1', 'eth0');
    expect((await api.get('/node/n1')).body.nics[0]).to.include({ port: 'gi1/0/1', switch: 's1' });
    // No network: an empty cell, as HIL's port show printed it (its node show printed None).
    expect(rows(await cli.ok('port', 'show', 's1', 'gi1/0/1'))).to.deep.equal([['Field', 'Value'], ['Node', 'n1'], ['NIC', 'eth0'], ['Networks', '']]);
    const expected = { node: 'n1', nic: 'eth0', networks: {} };
    expect(await cli.json('port', 'show', 's1', 'gi1/0/1')).to.deep.equal(expected);
    expect(JSON.parse(await cli.ok('port', 'show', 's1', 'gi1/0/1', '--jsonout'))).to.deep.equal(expected);
    expect(rows(await cli.ok('port', 'show', 's1', 'gi1/0/2'))[1][1]).to.match(/None/);
    await cli.ok('port', 'nic', 'remove', 's1', 'gi1/0/1');
    expect((await api.get('/switch/s1/port/gi1/0/1')).body).to.deep.equal({});
    await cli.ok('port', 'delete', 's1', 'gi1/0/2');
    expect((await api.get('/switch/s1')).body.ports).to.deep.equal(['gi1/0/1']);
  });

  it('port show: a port\'s networks as HIL\'s port show printed them, `network (channel)` a line each', async () => {
    await cli.ok('port', 'nic', 'add', 's1', 'gi1/0/1', 'n1', 'eth0');
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    await must(api.put('/network/pn1', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/pn2', { owner: 'p', access: 'p', net_id: '' }));
    const tagged = `vlan/${(await must(api.get('/network/pn2'))).body.channels.find((ch: string) => ch !== 'vlan/native').slice(5)}`;
    for (const [net, channel] of [['pn1', 'vlan/native'], ['pn2', tagged]]) {
      const id = (await must(api.post('/node/n1/nic/eth0/connect_network', { network: net, channel }), 202)).body.status_id;
      await finished(api, id);
    }
    const shown = rows(await cli.ok('port', 'show', 's1', 'gi1/0/1'));
    expect(shown.slice(0, 3)).to.deep.equal([['Field', 'Value'], ['Node', 'n1'], ['NIC', 'eth0']]);
    expect(shown.slice(3)).to.have.deep.members([['Networks', 'pn1 (vlan/native)'], ['', `pn2 (${tagged})`]]);
    expect(shown[3][0]).to.equal('Networks');
    // Left as the next tests expect it: the port unwired, n1 free.
    await finished(api, (await must(api.post('/switch/s1/port/gi1/0/1/revert'), 202)).body.status_id);
    await must(api.post('/project/p/detach_node', { node: 'n1' }));
    await cli.ok('port', 'nic', 'remove', 's1', 'gi1/0/1');
  });

  it('port revert: prints the status id (table, JSON); with --wait the final status', async () => {
    await cli.ok('port', 'nic', 'add', 's1', 'gi1/0/1', 'n1', 'eth0');
    const table = rows(await cli.ok('port', 'revert', 's1', 'gi1/0/1'));
    expect(table[0]).to.deep.equal(['Field', 'Value']);
    expect(table[1][0]).to.equal('Status ID');
    expect((await must(api.get(`/networking_action/${table[1][1]}`))).body.type).to.equal('revert_port');
    for (let i = 0; i < 200 && (await api.get(`/networking_action/${table[1][1]}`)).body.status === 'PENDING'; i++) await new Promise((r) => setTimeout(r, 10));
    const j = await cli.json('port', 'revert', 's1', 'gi1/0/1');
    expect(j).to.have.all.keys('status_id');
    for (let i = 0; i < 200 && (await api.get(`/networking_action/${j.status_id}`)).body.status === 'PENDING'; i++) await new Promise((r) => setTimeout(r, 10));
    const r = await cli.run('port', 'revert', 's1', 'gi1/0/1', '--wait', '--json');
    expect(r.code).to.equal(0);
    expect(JSON.parse(r.stdout)).to.deep.include({ status: 'DONE', type: 'revert_port', node: 'n1', nic: 'eth0' });
  });

  it('switch register: arista_eos as nexus without dummy_vlan, ovs with its bridge (HIL\'s CLI sent a hostname the driver did not take)', async () => {
    expect((await cli.as({ input: 'eos-secret-pw\n' })('switch', 'register', 'eos1', 'arista_eos', '127.0.0.1:2222', 'admin', '-')).code).to.equal(0);
    const eos = (await must(api.get('/admin/actors/switch/eos1'))).body.state;
    expect(eos.type).to.equal('http://schema.massopencloud.org/haas/v0/switches/arista_eos');
    expect(eos.fields).to.deep.equal({ hostname: '127.0.0.1:2222', username: 'admin', password: '[redacted]' });
    await cli.ok('switch', 'register', 'ovs1', 'ovs', 'br-lab');
    const ovs = (await must(api.get('/admin/actors/switch/ovs1'))).body.state;
    expect(ovs.type).to.equal('http://schema.massopencloud.org/haas/v0/switches/ovs');
    expect(ovs.fields).to.deep.equal({ ovs_bridge: 'br-lab' });
  });

  it('switch show: an SSH switch\'s host key; switch forget-host-key forgets it', async () => {
    const key = `SHA256:${'A'.repeat(43)}`;
    const reg = await cli.run('switch', 'register', 'eos2', 'http://schema.massopencloud.org/haas/v0/switches/arista_eos',
      JSON.stringify({ hostname: '127.0.0.1:2222', username: 'admin', password: 'eos-secret-pw', host_key: key }));
    expect(reg.code, reg.stderr).to.equal(0);
    expect(rows(await cli.ok('switch', 'show', 'eos2'))).to.deep.include(['Host key', key]);
    expect(await cli.json('switch', 'show', 'eos2')).to.deep.equal({ name: 'eos2', ports: [], host_key: key });
    await cli.as({ input: 'eos-secret-pw\n' })('switch', 'register', 'eos3', 'arista_eos', '127.0.0.1:2222', 'admin', '-', '--host-key', key);
    expect((await must(api.get('/switch/eos3'))).body.host_key, 'pinned with the short form').to.equal(key);
    const bad = await cli.as({ input: 'eos-secret-pw\n' })('switch', 'register', 'eos4', 'arista_eos', '127.0.0.1:2222', 'admin', '-', '--host-key', 'MD5:xx');
    expect(bad.code, 'a malformed fingerprint is the server\'s 400').to.equal(1);
    await cli.ok('switch', 'forget-host-key', 'eos2');
    expect((await must(api.get('/switch/eos2'))).body.host_key).to.equal(null);
    expect(rows(await cli.ok('switch', 'show', 'eos2'))).to.deep.include(['Host key', 'none yet (recorded at the first login)']);
    // A switch without SSH has no host key to show.
    expect(rows(await cli.ok('switch', 'show', 's1')).map((r) => r[0])).to.not.include('Host key');
  });

  it('admin drift and admin repair: a row per port with what the service holds and what the switch has, then the count of each status', async () => {
    await must(api.put('/switch/ds', mockSwitch));
    await must(api.put('/switch/ds/port/gi1/0/1'));
    await must(api.put('/switch/ds/port/gi1/0/2'));
    await makeNode(api, 'dn1', ['eth0']);
    await must(api.post('/switch/ds/port/gi1/0/1/connect_nic', { node: 'dn1', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'dn1' }));
    await must(api.put('/network/dw', { owner: 'p', access: 'p', net_id: '' }));
    const vlan = Number((await must(api.get('/networks'))).body.dw.network_id);
    const op = (await must(api.post('/node/dn1/nic/eth0/connect_network', { network: 'dw' }), 202)).body.status_id;
    for (let i = 0; i < 200 && (await api.get(`/networking_action/${op}`)).body.status === 'PENDING'; i++) await new Promise((r) => setTimeout(r, 10));
    const text = await cli.ok('admin', 'drift', 'ds');
    // The free port was never shut (HILT_INACTIVE_PORTS=shutdown): drifted until a repair shuts it.
    expect(rows(text)).to.deep.equal([
      ['Port', 'NIC', 'Status', 'Held by the Service', 'On the Switch', 'Differences'],
      ['gi1/0/1', 'dn1 eth0', 'in_sync', `native ${vlan}; tagged none; up`, `native ${vlan}; tagged none; up`, ''],
      ['gi1/0/2', '', 'drifted', 'native none; tagged none; shut down', 'native none; tagged none; up', 'the port is up while it carries none of the service\'s networks (HILT_INACTIVE_PORTS=shutdown: a repair shuts it)'],
    ]);
    expect(text.trimEnd().split('\n').at(-1)).to.equal('ds: in_sync 1, drifted 1, pending 0, unreadable 0');
    // Behind the service's back: the native VLAN goes.
    const s = await ts.mockSwitch.open({ name: 'ds', type: 'mock', fields: {} }, new AbortController().signal);
    await s.removeNative('gi1/0/1');
    await s.close();
    const drift = await cli.json('admin', 'drift', 'ds');
    expect(drift.ports[0]).to.deep.include({ port: 'gi1/0/1', status: 'drifted', actual: { native: null, tagged: [], enabled: true } });
    expect(rows(await cli.ok('admin', 'drift', 'ds'))[1].slice(0, 3)).to.deep.equal(['gi1/0/1', 'dn1 eth0', 'drifted']);
    const health = async () => rows(await cli.ok('switch', 'list')).find((r) => r[0] === 'ds')!.slice(4);
    const [reach, audit, failing] = await health();
    expect(reach).to.match(/^reachable \(\d+s ago\)$/);
    expect(audit, 'the last audit\'s counts').to.match(/^drifted 2 \(\d+s ago\)$/);
    expect(failing, 'both ports drifted').to.equal('2');
    const repaired = await cli.ok('admin', 'repair', 'ds');
    expect(rows(repaired)[1].slice(0, 5)).to.deep.equal(['gi1/0/1', 'dn1 eth0', 'repaired', `native ${vlan}; tagged none; up`, 'native none; tagged none; up']);
    expect(rows(repaired)[2].slice(0, 5)).to.deep.equal(['gi1/0/2', '', 'repaired', 'native none; tagged none; shut down', 'native none; tagged none; up']);
    expect(repaired.trimEnd().split('\n').at(-1)).to.match(/^ds: .*repaired 2/);
    const [, repairedAudit, nowFailing] = await health();
    expect(repairedAudit, 'after the repair').to.match(/^repaired 2 \(\d+s ago\)$/);
    expect(nowFailing).to.equal('0');
    expect(ts.mockSwitch.enabled('ds', 'gi1/0/2'), 'the repair shut the free port').to.equal(false);
    expect(ts.mockSwitch.ports('ds')['gi1/0/1']).to.deep.include({ native: vlan });
    expect((await cli.json('admin', 'drift', 'ds')).summary).to.deep.include({ in_sync: 2, drifted: 0 });
    // Errors as for every call: an unknown switch is the server's 404 (exit 1).
    const r = await cli.run('admin', 'drift', 'nosuch');
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/NotFoundError/);
  });

  it('admin wiring: a switch\'s verdicts, every switch\'s problems, and the proposals for unwired ports', async () => {
    await must(api.put('/switch/ws', mockSwitch));
    for (const p of ['gi1/0/1', 'gi1/0/2']) await must(api.put(`/switch/ws/port/${p}`));
    await makeNode(api, 'wn1', ['eth0']);
    await makeNode(api, 'wn2', ['eth0']);
    await must(api.put('/node/wn1/nic/eth1', { macaddr: '02:00:00:00:99:01' }));
    await must(api.put('/node/wn2/nic/eth1', { macaddr: '02:00:00:00:99:02' }));
    await must(api.post('/switch/ws/port/gi1/0/1/connect_nic', { node: 'wn1', nic: 'eth1' }));
    ts.mockSwitch.learn('ws', 'gi1/0/1', { macs: ['02:00:00:00:99:01'] });
    ts.mockSwitch.learn('ws', 'gi1/0/2', { macs: ['02:00:00:00:99:02'] });
    const one = await cli.ok('admin', 'wiring', 'ws');
    expect(rows(one).slice(1).map((r) => r.slice(0, 5))).to.deep.equal([
      ['ws', 'gi1/0/1', 'wn1 eth1 (02:00:00:00:99:01)', 'ok', '02:00:00:00:99:01'],
      ['ws', 'gi1/0/2', '', 'unwired', '02:00:00:00:99:02'],
    ]);
    expect(one.trimEnd().split('\n').at(-1)).to.equal('ws: ok 1, mismatch 0, unseen 0, unwired 1');
    const all = await cli.ok('admin', 'wiring');
    expect(rows(all).slice(1).filter((r) => r[0] === 'ws').map((r) => r.slice(0, 4))).to.deep.equal([['ws', 'gi1/0/2', '', 'unwired']]);
    expect(all.trimEnd().split('\n').at(-1), all).to.match(/^all switches: ok \d+, mismatch \d+, unseen \d+, unwired 1, switches \d+, unsupported 0, failed \d+$/);
    const proposed = await cli.ok('admin', 'wiring', 'ws', '--propose');
    expect(rows(proposed).slice(1)).to.deep.equal([['gi1/0/2', 'wn2 eth1 (02:00:00:00:99:02)', 'mac', 'hilt port nic add ws gi1/0/2 wn2 eth1']]);
    expect((await cli.json('admin', 'wiring', 'ws', '--propose')).proposals).to.have.length(1);
    expect((await cli.run('admin', 'wiring', '--propose')).code).to.equal(2);
  });
});
