/**
 * Names that are also properties of JavaScript objects (`__proto__`, `constructor`) are ordinary
 * names (docs/api-conventions.md, Names) wherever an answer or a lookup is keyed by them: a
 * user's projects, a switch's failing ports (the API and the dashboard's ports table), the
 * dashboard's history per switch, and node metadata through `hilt import` and `hilt export`.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, mockSwitch, finished } from '../../helpers/server';
import { cliFor } from '../../helpers/cli';
import { switchHealth } from '../../../src/routes/lists';
import { SwitchHealth } from '../../../hardware/switch-health';
import { UiHistory } from '../../../src/ui/history';

describe('names that are also object properties', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
  });
  after(() => stopTestServer(ts));

  it('a user\'s projects named __proto__ and constructor are both shown, with their roles', async () => {
    for (const p of ['__proto__', 'constructor', 'plain']) await must(api.put(`/project/${p}`));
    await makeUser(api, 'una', 'una-pw-1', ['__proto__', 'plain']);
    await must(api.post('/auth/basic/user/una/add_project', { project: 'constructor', role: 'reader' }));
    const r = await must(api.get('/auth/basic/user/una'));
    expect(Object.entries(r.body.projects).sort()).to.deep.equal([['__proto__', 'member'], ['constructor', 'reader'], ['plain', 'member']]);
  });

  it('a port named __proto__ whose operation failed is failing, and one named constructor is not (OVS takes such names)', () => {
    // Mock and most families' port names have a fixed form; an OVS port may be named so.
    const health = new SwitchHealth();
    health.audited('ovs1', { summary: { in_sync: 2, drifted: 1 }, ports: [{ port: 'eth7', status: 'drifted' }, { port: '__proto__', status: 'in_sync' }, { port: 'constructor', status: 'in_sync' }] });
    const nics: Record<string, { actions: { status: string; error?: string }[] }> = {
      'n1/eth0': { actions: [{ status: 'ERROR', error: 'the switch refused' }] },
      'n2/eth0': { actions: [{ status: 'DONE' }] },
    };
    const rm = { nic: (node: string, nic: string) => nics[`${node}/${nic}`] };
    const ports = [
      { name: '__proto__', wire: { node: 'n1', nic: 'eth0' } },
      { name: 'constructor', wire: { node: 'n2', nic: 'eth0' } },
      { name: 'eth7', wire: null },
    ];
    const h = switchHealth(rm as never, health, 'ovs1', ports as never);
    expect(Object.keys(h.failingPorts).sort()).to.deep.equal(['__proto__', 'eth7']);
    expect(h.failingPorts.__proto__).to.equal('last operation failed: the switch refused');
    // What the dashboard's ports table asks of it, port by port.
    expect(h.failingPorts.constructor).to.equal(undefined);
    expect(h.failing).to.equal(2);
  });

  it('the dashboard\'s history keeps the operations of switches named __proto__ and constructor apart', async () => {
    await must(api.put('/project/ph'));
    await must(api.put('/network/net-h', { owner: 'ph', access: 'ph', net_id: '' }));
    for (const [sw, node] of [['__proto__', 'nh1'], ['constructor', 'nh2']]) {
      await must(api.put(`/switch/${sw}`, mockSwitch));
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/${sw}/port/gi1/0/1`));
      await must(api.post(`/switch/${sw}/port/gi1/0/1/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post('/project/ph/connect_node', { node }));
      const id = (await must(api.post(`/node/${node}/nic/eth0/connect_network`, { network: 'net-h' }), 202)).body.status_id;
      await finished(api, id);
    }
    const history = new UiHistory({ metrics: ts.app.hilt.metrics, queues: () => ({ switch: 0, obm: 0, headnode: 0 }), pending: () => 0 });
    const sample = await history.sample(history.hour, 10);
    expect(Object.keys(sample.switches)).to.include.members(['__proto__', 'constructor']);
    expect(JSON.parse(JSON.stringify(sample)).switches).to.have.own.property('__proto__');
  });

  it('node metadata labels __proto__ and constructor go through hilt import and come back from hilt export, and a node without them has empty cells', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hilt-names-'));
    try {
      const csv = join(dir, 'in.csv');
      writeFileSync(csv, [
        'node,nic,macaddr,switch,port,obm.type,obm.host,obm.user,obm.password,metadata.__proto__,metadata.constructor,metadata.rack',
        'm1,eth0,02:00:00:00:0a:00,,,mock,127.0.0.1,bmc,bmc-pw-1,p1,c1,r1',
        'm2,eth0,02:00:00:00:0a:01,,,mock,127.0.0.1,bmc,bmc-pw-1,,,r2',
        '',
      ].join('\n'));
      const cli = cliFor(ts.url);
      const first = await cli.run('import', csv);
      expect(first.code, first.stderr).to.equal(0);
      const m1 = (await must(api.get('/node/m1'))).body;
      expect(Object.entries(m1.metadata).sort()).to.deep.equal([['__proto__', 'p1'], ['constructor', 'c1'], ['rack', 'r1']]);
      // A second import changes nothing: the labels compare as the node's own.
      const again = await cli.run('import', csv);
      expect([again.code, again.stdout]).to.deep.equal([0, `nothing to change: the 4 objects ${csv} names are registered as it says\n`]);
      const out = await cli.ok('export', '--format', 'csv');
      const [head, ...lines] = out.trim().split('\n');
      const cols = head.split(',');
      const cells = (node: string) => {
        const row = lines.find((l) => l.startsWith(`${node},`))!.split(',');
        return Object.fromEntries(['metadata.__proto__', 'metadata.constructor', 'metadata.rack'].map((c) => [c, row[cols.indexOf(c)]]));
      };
      expect(cells('m1')).to.deep.equal({ 'metadata.__proto__': 'p1', 'metadata.constructor': 'c1', 'metadata.rack': 'r1' });
      expect(cells('m2')).to.deep.equal({ 'metadata.__proto__': '', 'metadata.constructor': '', 'metadata.rack': 'r2' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
