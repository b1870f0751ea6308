/** hilt user …, hilt headnode …, hilt networking-action … and hilt admin … against a started server. */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch, deadSwitch } from '../../helpers/server';
import { portId } from '../../../actors/ids';
import { cliFor, rows } from '../../helpers/cli';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hilt user, headnode, networking-action and admin', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  let statusId: string;
  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock', baseImages: ['base-headnode'] });
    api = ts.api;
    cli = cliFor(ts.url);
    await must(api.put('/project/p'));
    await makeNode(api, 'n1', ['eth0']);
    await must(api.put('/switch/s1', mockSwitch));
    await must(api.put('/switch/s1/port/gi1/0/1'));
    await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
  });
  after(() => stopTestServer(ts));

  describe('user', () => {
    it('create <username> <password> admin|regular: the user can then call; - reads the password', async () => {
      const r = await cli.run('user', 'create', 'bob', 'bob-pw', 'regular');
      expect(r.code).to.equal(0);
      expect(r.stderr).to.match(/warning: the password of the new user bob is on the command line/);
      expect((await cli.as({ as: { user: 'bob', password: 'bob-pw' } })('project', 'list')).code, 'a regular user').to.equal(1);
      const c = await cli.as({ input: 'carol-pw\n' })('user', 'create', 'carol', '-', 'admin');
      expect(c.code).to.equal(0);
      expect(c.stderr).to.equal('');
      expect((await cli.as({ as: { user: 'carol', password: 'carol-pw' } })('project', 'list')).code, 'an admin').to.equal(0);
      const bad = await cli.run('user', 'create', 'dave', 'pw', 'superuser');
      expect(bad.code).to.equal(2);
      expect(bad.stderr).to.match(/admin, regular or auditor/);
      // The arguments swapped: the role's place holds the password, which the error must not repeat.
      const swapped = await cli.run('user', 'create', 'erin', 'admin', 'erin-s3cret');
      expect(swapped.code).to.equal(2);
      expect(swapped.stderr).to.match(/admin, regular or auditor/).and.not.include('erin-s3cret');
    });

    it('project add|remove <user> <project>, set-admin <user> admin|regular, delete', async () => {
      const bob = cli.as({ as: { user: 'bob', password: 'bob-pw' } });
      expect((await bob('project', 'node', 'list', 'p')).code).to.equal(1);
      await cli.ok('user', 'project', 'add', 'bob', 'p');
      expect(rows((await bob('project', 'node', 'list', 'p')).stdout)).to.deep.equal([['Nodes (1)'], ['n1']]);
      await cli.ok('user', 'project', 'remove', 'bob', 'p');
      expect((await bob('project', 'node', 'list', 'p')).code).to.equal(1);
      await cli.ok('user', 'set-admin', 'bob', 'admin');
      expect((await bob('project', 'list')).code).to.equal(0);
      await cli.ok('user', 'set-admin', 'bob', 'regular');
      expect((await bob('project', 'list')).code).to.equal(1);
      await cli.ok('user', 'delete', 'bob');
      const gone = await bob('project', 'list');
      expect(gone.code).to.equal(1);
      expect(gone.stderr).to.match(/AuthorizationError/);
    });
  });

  describe('headnode', () => {
    it('create, list, list-images, nic create|delete, network connect|detach, show, start, stop, delete', async () => {
      expect(rows(await cli.ok('headnode', 'list-images'))).to.deep.equal([['Images (1)'], ['base-headnode']]);
      expect(await cli.json('headnode', 'list-images')).to.deep.equal(['base-headnode']);
      await cli.ok('headnode', 'create', 'h1', 'p', 'base-headnode');
      expect(rows(await cli.ok('headnode', 'list', 'p')).map((r) => r.slice(0, 2))).to.deep.equal([['Headnode', 'State'], ['h1', 'created']]);
      expect(await cli.json('headnode', 'list', 'p')).to.deep.equal(['h1']);
      await cli.ok('headnode', 'nic', 'create', 'h1', 'hn0');
      await cli.ok('headnode', 'nic', 'create', 'h1', 'hn1');
      await cli.ok('headnode', 'nic', 'delete', 'h1', 'hn1');
      await cli.ok('headnode', 'network', 'connect', 'h1', 'hn0', 'w');
      expect((await api.get('/headnode/h1')).body.networks).to.deep.equal({ hn0: 'w' });
      // HIL's CLI asked for a network here that the call does not take.
      await cli.ok('headnode', 'network', 'detach', 'h1', 'hn0', 'w');
      expect((await api.get('/headnode/h1')).body.networks).to.deep.equal({ hn0: null });
      await cli.ok('headnode', 'network', 'connect', 'h1', 'hn0', 'w');
      await cli.ok('headnode', 'start', 'h1');
      const show = rows(await cli.ok('headnode', 'show', 'h1'));
      expect(show).to.deep.include.members([['Name', 'h1'], ['Project', 'p'], ['Status', 'running'], ['Base image', 'base-headnode'], ['Hnics', 'hn0: w']]);
      const body = (await api.get('/headnode/h1')).body;
      expect(show).to.deep.include(['VNC port', String(body.vncport)]);
      expect(await cli.json('headnode', 'show', 'h1')).to.deep.equal(body);
      await cli.ok('headnode', 'stop', 'h1');
      expect((await api.get('/headnode/h1')).body.status).to.equal('stopped');
      await cli.ok('headnode', 'delete', 'h1');
      expect((await api.get('/headnode/h1')).status).to.equal(404);
    });
  });

  describe('networking-action', () => {
    it('show <status_id>: HIL\'s rows (table), --json and --jsonout', async () => {
      statusId = (await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'w' }), 202)).body.status_id;
      while ((await api.get(`/networking_action/${statusId}`)).body.status === 'PENDING') await sleep(10);
      // HIL's rows and only those: a script polling with `grep Status` finds one line, the status.
      const shown = rows(await cli.ok('networking-action', 'show', statusId));
      expect(shown).to.deep.equal([
        ['Field', 'Value'], ['Node', 'n1'], ['NIC', 'eth0'], ['New Network', 'w'], ['Type', 'modify_port'], ['Channel', 'vlan/native'], ['Status', 'DONE'],
      ]);
      expect(shown.filter(([f]) => /Status/.test(f))).to.deep.equal([['Status', 'DONE']]);
      const server = (await api.get(`/networking_action/${statusId}`)).body;
      expect(await cli.json('networking-action', 'show', statusId)).to.deep.equal(server);
      expect(JSON.parse(await cli.ok('networking-action', 'show', statusId, '--jsonout'))).to.deep.equal(server);
      const r = await cli.run('networking-action', 'show', 'bogus');
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(/NotFoundError/);
    });

    it('list <node>: the node\'s operations, newest first, by short id; show takes the short id', async () => {
      const t = rows(await cli.ok('networking-action', 'list', 'n1'));
      expect(t[0]).to.deep.equal(['ID', 'Node', 'NIC', 'Type', 'Network', 'Channel', 'Status', 'Accepted', 'Finished', 'Error']);
      const json = await cli.json('networking-action', 'list', 'n1');
      expect(json[0].status_id, 'the full id in --json').to.equal(statusId);
      // The node's list answers as HIL-era clients know it; the system-wide list carries the short id.
      json[0].short_id = (await cli.json('networking-action', 'list')).find((a: { status_id: string }) => a.status_id === statusId).short_id;
      expect(json[0].short_id).to.match(/^[0-9a-f]{8}$/);
      expect(t[1].slice(0, 7)).to.deep.equal([json[0].short_id, 'n1', 'eth0', 'modify_port', 'w', 'vlan/native', 'DONE']);
      expect(rows(await cli.ok('networking-action', 'show', json[0].short_id)).slice(1), 'show by the short id prints the full one, last').to.deep.equal([
        ['Node', 'n1'], ['NIC', 'eth0'], ['New Network', 'w'], ['Type', 'modify_port'], ['Channel', 'vlan/native'], ['Status', 'DONE'], ['Status ID', statusId],
      ]);
      const unknown = await cli.run('networking-action', 'show', '00000000');
      expect([unknown.code, unknown.stderr]).to.deep.equal([1, 'hilt: NotFoundError: no recent operation has the short id 00000000: give its full status id (hilt networking-action list NODE --json)\n']);
    });
  });

  describe('admin', () => {
    it('actors: per kind; of one kind; one entity (one name, two for a nic or a port)', async () => {
      const kinds = rows(await cli.ok('admin', 'actors'));
      expect(kinds[0]).to.deep.equal(['Kind', 'Live Actors', 'Messages Waiting']);
      expect(kinds.map((r) => r[0])).to.include.members(['node', 'nic', 'port', 'switch', 'network', 'project', 'user', 'headnode']);
      expect(rows(await cli.ok('admin', 'actors', 'node')).map((r) => r[0])).to.include('n1');
      const node = rows(await cli.ok('admin', 'actors', 'node', 'n1'));
      expect(node).to.deep.include.members([['kind', 'node'], ['id', 'n1'], ['state.project', 'p']]);
      const port = await cli.json('admin', 'actors', 'port', 's1', 'gi1/0/1');
      expect(port).to.deep.include({ kind: 'port', id: 's1/gi1%2F0%2F1' });
      expect(port.state.wire).to.deep.include({ node: 'n1', nic: 'eth0' });
      const nic = await cli.json('admin', 'actors', 'nic', 'n1', 'eth0');
      expect(nic.state.networks).to.deep.equal({ 'vlan/native': 'w' });
      const one = await cli.run('admin', 'actors', 'port', 's1');
      expect(one.code).to.equal(2);
      expect(one.stderr).to.match(/two names/);
    });

    it('journal with --limit; extensions', async () => {
      const j = rows(await cli.ok('admin', 'journal', 'node', 'n1', '--limit', '2'));
      expect(j[0]).to.deep.equal(['Seq', 'At', 'By', 'Event', 'Details']);
      expect(j.slice(1).map((r) => r[3])).to.deep.equal(['NodeAssigned', 'NodeRegistered']);
      expect((await cli.json('admin', 'journal', 'nic', 'n1', 'eth0', '--limit', '1'))).to.have.length(1);
      expect((await cli.run('admin', 'journal', 'node', 'n1', '--limit', '0')).code).to.equal(2);
      const ext = rows(await cli.ok('admin', 'extensions')).map((r) => r[0]);
      expect(ext[0]).to.equal(`Extensions (${ext.length - 1})`);
      expect(ext).to.include.members(['hilt.auth.database', 'hilt.switches.mock']);
    });

    it('reapply <node> <nic> (--wait) and force-detach <node> <nic> <network>', async () => {
      const r = await cli.run('admin', 'reapply', 'n1', 'eth0', '--wait');
      expect(r.code, r.stderr).to.equal(0);
      expect(rows(r.stdout)).to.deep.include.members([['Type', 'reapply_port'], ['Status', 'DONE']]);
      await cli.ok('admin', 'force-detach', 'n1', 'eth0', 'w');
      expect((await api.get('/node/n1')).body.nics[0].networks).to.deep.equal({});
      const again = await cli.run('admin', 'force-detach', 'n1', 'eth0', 'w');
      expect(again.code).to.equal(1);
      expect(again.stderr).to.match(/^hilt: IllegalStateError: /);
    });

    it('clear-doubt <switch> <port>: an admin clears a port\'s doubt by hand, audited', async () => {
      // A failed change whose set-back was never confirmed (a switch gone for good: no login
      // answers, so the service's own set-back cannot clear the doubt while the command runs).
      const dead = deadSwitch(ts, 's1');
      try {
        await ts.world.ports.ask(portId('s1', 'gi1/0/1'), { type: 'port.doubt', by: 'switch', vlans: [3999] });
        await cli.ok('admin', 'clear-doubt', 's1', 'gi1/0/1');
      } finally {
        dead.revive();
      }
      expect(ts.world.rm.port('s1', 'gi1/0/1')!.doubt).to.equal(undefined);
      // The switch back, the set-back the clear left owed may follow it in the journal (by `switch`).
      const journal = await cli.json('admin', 'journal', 'port', 's1', 'gi1/0/1', '--limit', '2') as { by: string; event: { type: string } }[];
      expect(journal.find((e) => e.event.type === 'PortDoubtClearedByHand')).to.deep.include({ by: 'admin', event: { type: 'PortDoubtClearedByHand', vlans: [3999] } });
      const again = await cli.run('admin', 'clear-doubt', 's1', 'gi1/0/1');
      expect(again.code).to.equal(1);
      expect(again.stderr).to.match(/^hilt: IllegalStateError: port gi1\/0\/1 of switch s1 is not in doubt/);
    });
  });
});
