/** hilt project … and hilt network … against a started server. */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, mockSwitch, Creds } from '../../helpers/server';
import { cliFor, rows } from '../../helpers/cli';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('hilt project and hilt network', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  let alice: Creds; // member of pa
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
  });
  after(() => stopTestServer(ts));

  describe('project', () => {
    it('create, list (table, JSON) and delete', async () => {
      expect(await cli.ok('project', 'create', 'pa')).to.equal('');
      await cli.ok('project', 'create', 'pb');
      await cli.ok('project', 'create', 'gone');
      await cli.ok('project', 'delete', 'gone');
      expect(rows(await cli.ok('project', 'list'))).to.deep.equal([['Projects (2)'], ['pa'], ['pb']]);
      expect((await cli.json('project', 'list')).sort()).to.deep.equal(['pa', 'pb']);
      alice = await makeUser(api, 'alice', 'pw-a', ['pa']);
    });

    it('node add, list and remove', async () => {
      await makeNode(api, 'na', ['eth0']);
      await makeNode(api, 'nb', ['eth0']);
      await cli.ok('project', 'node', 'add', 'pa', 'na');
      await cli.ok('project', 'node', 'add', 'pa', 'nb');
      expect(rows(await cli.ok('project', 'node', 'list', 'pa'))).to.deep.equal([['Nodes (2)'], ['na'], ['nb']]);
      await cli.ok('project', 'node', 'remove', 'pa', 'nb');
      expect(await cli.json('project', 'node', 'list', 'pa')).to.deep.equal(['na']);
      expect((await api.get('/nodes/free')).body).to.include('nb');
      const r = await cli.run('project', 'node', 'remove', 'pa', 'nb');
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(/^hilt: ProjectMismatchError: /);
    });

    it('names the server takes but a URL would not carry as they are: ".", "..", spaces, "%", "/", unicode', async () => {
      // A URL parser drops "." and ".." segments (even %2E%2E): the call would go to another path.
      const names = ['.', '..', 'a b', '50%', 'x/y', 'é-ü'];
      for (const n of names) {
        expect(await cli.ok('project', 'create', n), n).to.equal('');
        await cli.ok('project', 'node', 'list', n);
      }
      expect((await api.get('/projects')).body).to.include.members(names);
      for (const n of names) await cli.ok('project', 'delete', n);
      expect((await api.get('/projects')).body).to.not.include.members(names);
    });

    it('list-networks: the networks the project may use', async () => {
      await must(api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }));
      expect(rows(await cli.as({ as: alice })('project', 'list-networks', 'pa').then((r) => r.stdout))).to.deep.equal([['Networks (1)'], ['pa-net']]);
      expect(await cli.json('project', 'list-networks', 'pa')).to.deep.equal(['pa-net']);
    });
  });

  describe('network', () => {
    it('create: access defaults to the owner and the id to the pool; --access and --net-id (and HIL\'s older --net_id) for admins', async () => {
      await cli.as({ as: alice })('network', 'create', 'w1', 'pa');
      expect((await api.get('/network/w1')).body).to.deep.include({ owner: 'pa', access: ['pa'] });
      await cli.ok('network', 'create', 'pub', 'admin', '--access', '', '--net-id', '3001');
      expect((await api.get('/networks')).body.pub).to.deep.equal({ network_id: '3001', projects: null });
      await cli.ok('network', 'create', 'old', 'admin', '--access', 'pb', '--net_id', '3002');
      expect((await api.get('/networks')).body.old).to.deep.equal({ network_id: '3002', projects: ['pb'] });
    });

    it('create NET admin: an admin network, public unless --access names a project (issue 26: it asked for a project "admin")', async () => {
      await cli.ok('network', 'create', 'adminnet', 'admin');
      expect((await api.get('/network/adminnet')).body).to.deep.include({ owner: 'admin', access: null });
      expect((await api.get('/networks')).body.adminnet.projects).to.equal(null);
    });

    it('show: name, owner, channels, access and connected nodes; JSON as the server gives it', async () => {
      await must(api.put('/switch/s1', mockSwitch));
      await must(api.put('/switch/s1/port/gi1/0/1'));
      await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'na', nic: 'eth0' }));
      const id = (await must(api.post('/node/na/nic/eth0/connect_network', { network: 'w1' }), 202)).body.status_id;
      while ((await api.get(`/networking_action/${id}`)).body.status === 'PENDING') await sleep(10);
      const vlan = (await api.get('/networks')).body.w1.network_id;
      expect(rows(await cli.ok('network', 'show', 'w1'))).to.deep.equal([
        ['Field', 'Value'], ['Name', 'w1'], ['Owner', 'pa'], ['Channels', 'vlan/native'], ['', `vlan/${vlan}`], ['Access', 'pa'], ['Connected Nodes', 'na(eth0)'],
      ]);
      expect(rows(await cli.ok('network', 'show', 'pub'))).to.deep.include(['Access', 'public']);
      expect(await cli.json('network', 'show', 'w1')).to.deep.equal((await api.get('/network/w1')).body);
    });

    it('list: name, id, projects; list-attachments: node, project, nic, channel, all or --project', async () => {
      const list = rows(await cli.ok('network', 'list'));
      expect(list[0]).to.deep.equal(['Name', 'Network ID', 'Projects']);
      expect(list).to.deep.include.members([['pub', '3001', 'public'], ['old', '3002', 'pb']]);
      expect(Object.keys(await cli.json('network', 'list')).sort()).to.deep.equal(['adminnet', 'old', 'pa-net', 'pub', 'w1']);
      expect(rows(await cli.ok('network', 'list-attachments', 'w1'))).to.deep.equal([['Node', 'Project', 'NIC', 'Channel'], ['na', 'pa', 'eth0', 'vlan/native']]);
      expect(await cli.json('network', 'list-attachments', 'w1', '--project', 'pa')).to.deep.equal({ na: { nic: 'eth0', channel: 'vlan/native', project: 'pa' } });
      expect(rows(await cli.ok('network', 'list-attachments', 'w1', '--project', 'pb'))).to.deep.equal([['Node', 'Project', 'NIC', 'Channel']]);
      // HIL's CLI and client took the project `all` for every project's attachments (its default).
      expect(await cli.json('network', 'list-attachments', 'w1', '--project', 'all')).to.deep.equal({ na: { nic: 'eth0', channel: 'vlan/native', project: 'pa' } });
    });

    it('grant-access and revoke-access <network> <project>', async () => {
      await cli.ok('network', 'grant-access', 'w1', 'pb');
      expect((await api.get('/network/w1')).body.access).to.have.members(['pa', 'pb']);
      await cli.ok('network', 'revoke-access', 'w1', 'pb');
      expect((await api.get('/network/w1')).body.access).to.deep.equal(['pa']);
      const r = await cli.run('network', 'revoke-access', 'w1', 'pb');
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(/NotFoundError/);
    });

    it('delete', async () => {
      await cli.ok('network', 'delete', 'old');
      expect((await api.get('/network/old')).status).to.equal(404);
      const r = await cli.run('network', 'delete', 'w1');
      expect(r.code, 'an attached network').to.equal(1);
      expect(r.stderr).to.match(/BlockedError/);
    });
  });

  describe('project node remove --force (HIL\'s)', () => {
    it('reverts the ports of the node\'s nics that are on networks, waits for them, then removes the node', async () => {
      const attached = await cli.run('project', 'node', 'remove', 'pa', 'na');
      expect(attached.code, 'without --force, a node on a network stays').to.equal(1);
      const asMember = await cli.as({ as: alice })('project', 'node', 'remove', 'pa', 'na', '--force');
      expect(asMember.code, 'a member sees no ports to revert').to.equal(1);
      expect((await api.get('/project/pa/nodes')).body).to.include('na');
      const r = await cli.run('project', 'node', 'remove', 'pa', 'na', '--force');
      expect([r.code, r.stdout], r.stderr).to.deep.equal([0, '']);
      expect((await api.get('/network/w1/attachments')).body).to.deep.equal({});
      expect((await api.get('/node/na')).body.nics[0].networks).to.deep.equal({});
      expect((await api.get('/nodes/free')).body).to.include('na');
    });
  });
});
