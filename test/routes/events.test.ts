/**
 * GET /events: every committed change as one event, in commit order, with its fields; resumes
 * without loss or repeat; filters; access per project; bad input.
 */
import { expect } from 'chai';
import { startTestServer, TestServer, Client, must, makeUser, mockSwitch, obm, finished, ADMIN, Creds } from '../helpers/server';
import { SseStream, SseEvent } from '../helpers/sse';
import type { PersistedEvent } from '../../actors/persistence/engine';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function journal(ts: TestServer, after = 0): Promise<PersistedEvent[]> {
  const out: PersistedEvent[] = [];
  for await (const e of ts.world.runtime.engine.feed(after)) if (!e.key.startsWith('meta:')) out.push(e);
  return out;
}

describe('GET /events', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const open = (query = '', as: Creds | null = ADMIN, lastEventId?: string) => new SseStream(`${ts.url}/events${query}`, { as, lastEventId });

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock', baseImages: ['base-headnode'] });
    api = ts.api;
  });

  it('gives every API change exactly its events, in commit order, with their fields (table-driven)', async () => {
    const s = open();
    expect(await s.answered()).to.equal(200);
    expect(s.headers['content-type']).to.match(/^text\/event-stream/);
    await must(api.put('/project/red'));
    const alice = await makeUser(api, 'alice', 'alice-pw', ['red']);
    const al = api.with(alice);
    // [call, then the events it must make: [type, kind, name, project]]
    type Row = [string, () => Promise<unknown>, [string, string, string, string | null][]];
    let op = '';
    const rows: Row[] = [
      ['project_create', () => must(api.put('/project/blue')), [['project.created', 'project', 'blue', 'blue']]],
      ['node_register', () => must(api.put('/node/n1', { obm: obm() })), [['node.registered', 'node', 'n1', null]]],
      ['node_register_nic', () => must(api.put('/node/n1/nic/eth0', { macaddr: 'de:ad:be:ef:00:01' })), [['nic.registered', 'nic', 'n1/eth0', null]]],
      ['node_set_metadata', () => must(api.put('/node/n1/metadata/rack', { value: 'r1' })), [['node.metadata_set', 'node', 'n1', null]]],
      ['switch_register', () => must(api.put('/switch/s1', mockSwitch)), [['switch.registered', 'switch', 's1', null]]],
      ['switch_register_port', () => must(api.put('/switch/s1/port/gi1/0/1')), [['port.registered', 'port', 's1/gi1%2F0%2F1', null]]],
      ['port_connect_nic', () => must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' })), [['port.nic_connected', 'port', 's1/gi1%2F0%2F1', null]]],
      ['project_connect_node', () => must(al.post('/project/red/connect_node', { node: 'n1' })), [['project.node_added', 'node', 'n1', 'red']]],
      ['network_create', () => must(al.put('/network/rnet', { owner: 'red', access: 'red', net_id: '' })), [['network.created', 'network', 'rnet', 'red']]],
      ['network_grant_project_access', () => must(al.put('/network/rnet/access/blue')), [['network.access_granted', 'network', 'rnet', 'red']]],
      ['network_revoke_project_access', () => must(al.del('/network/rnet/access/blue')), [['network.access_revoked', 'network', 'rnet', 'red']]],
      ['node_connect_network', async () => {
        op = (await must(al.post('/node/n1/nic/eth0/connect_network', { network: 'rnet' }), 202)).body.status_id;
        expect((await finished(al, op)).status).to.equal('DONE');
      }, [['networking_action.accepted', 'nic', 'n1/eth0', 'red'], ['networking_action.finished', 'nic', 'n1/eth0', 'red'], ['port.configured', 'port', 's1/gi1%2F0%2F1', null]]],
      ['node_detach_network', async () => {
        const id = (await must(al.post('/node/n1/nic/eth0/detach_network', { network: 'rnet' }), 202)).body.status_id;
        await finished(al, id);
      }, [['networking_action.accepted', 'nic', 'n1/eth0', 'red'], ['networking_action.finished', 'nic', 'n1/eth0', 'red'], ['port.configured', 'port', 's1/gi1%2F0%2F1', null]]],
      ['headnode_create', () => must(al.put('/headnode/h1', { project: 'red', base_img: 'base-headnode' })), [['headnode.created', 'headnode', 'h1', 'red']]],
      ['headnode_create_hnic', () => must(al.put('/headnode/h1/hnic/hn0')), [['headnode.hnic_created', 'headnode', 'h1', 'red']]],
      ['headnode_connect_network', () => must(al.post('/headnode/h1/hnic/hn0/connect_network', { network: 'rnet' })), [['headnode.network_attached', 'headnode', 'h1', 'red']]],
      ['headnode_delete', () => must(al.del('/headnode/h1')), [['headnode.delete_requested', 'headnode', 'h1', 'red'], ['headnode.deleted', 'headnode', 'h1', 'red']]],
      ['user_create', () => must(api.put('/auth/basic/user/bob', { password: 'bob-pw' })), [['user.created', 'user', 'bob', null]]],
      ['user_add_project', () => must(api.post('/auth/basic/user/bob/add_project', { project: 'blue' })), [['project.user_added', 'user', 'bob', 'blue']]],
      ['user_remove_project', () => must(api.post('/auth/basic/user/bob/remove_project', { project: 'blue' })), [['project.user_removed', 'user', 'bob', 'blue']]],
      ['user_delete', () => must(api.del('/auth/basic/user/bob')), [['user.deleted', 'user', 'bob', null]]],
      ['network_delete', () => must(al.del('/network/rnet')), [['network.deleted', 'network', 'rnet', 'red']]],
      ['project_detach_node', () => must(al.post('/project/red/detach_node', { node: 'n1' })), [['project.node_removed', 'node', 'n1', 'red']]],
      ['port_detach_nic', () => must(api.post('/switch/s1/port/gi1/0/1/detach_nic')), [['port.nic_detached', 'port', 's1/gi1%2F0%2F1', null]]],
      ['node_delete_nic', () => must(api.del('/node/n1/nic/eth0')), [['nic.deleted', 'nic', 'n1/eth0', null]]],
      ['switch_delete_port', () => must(api.del('/switch/s1/port/gi1/0/1')), [['port.deleted', 'port', 's1/gi1%2F0%2F1', null]]],
      ['switch_delete', () => must(api.del('/switch/s1')), [['switch.deleted', 'switch', 's1', null]]],
      ['node_delete', () => must(api.del('/node/n1')), [['node.deleted', 'node', 'n1', null]]],
      ['project_delete', () => must(api.del('/project/blue')), [['project.deleted', 'project', 'blue', 'blue']]],
    ];
    await s.count(3);
    for (const [call, run, expected] of rows) {
      const before = s.events.length;
      const at = (await ts.world.runtime.engine.bounds()).last;
      await run();
      await s.count(before + expected.length);
      await sleep(50);
      const got = s.events.slice(before);
      // Exactly its events: the journal's, in its order, and no more.
      const j = await journal(ts, at);
      expect(got.map((e) => e.id), call).to.deep.equal(j.map((e) => String(e.position)));
      const shape = (e: SseEvent) => [e.event, e.data.kind, e.data.name, e.data.project];
      const sorted = (x: unknown[][]) => [...x].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
      expect(sorted(got.map(shape)), call).to.deep.equal(sorted(expected));
      for (const e of got) {
        expect(e.data.id).to.equal(e.id);
        expect(e.data.type).to.equal(e.event);
        expect(e.data.at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(['admin', 'alice', 'hilt']).to.include(e.data.by);
        expect(e.data.data).to.be.an('object');
      }
    }
    const ids = s.events.map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i], 'ids strictly increase').to.be.above(ids[i - 1]);
    // A network operation's events carry its public status, the status id the 202 gave included.
    const fin = s.events.filter((e) => e.event === 'networking_action.finished')[0];
    expect(fin.data.data.operation).to.deep.include({ status_id: op, status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'rnet' });
    expect(fin.data.by).to.equal('hilt');
    const acc = s.events.filter((e) => e.event === 'networking_action.accepted')[0];
    expect(acc.data.by).to.equal('alice');
    expect(acc.data.data.operation).to.deep.include({ status_id: op, status: 'PENDING' });
    // No secret: the BMC's and the switch's passwords are redacted.
    const text = JSON.stringify(s.events);
    expect(text).to.not.include('obm-secret');
    expect(text).to.not.include('switch-secret');
    expect(s.events.find((e) => e.event === 'node.registered')!.data.data.obm.fields.password).to.equal('[redacted]');
    s.close();
  });
});
