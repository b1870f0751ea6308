import { expect } from 'chai';
import { startTestServer, TestServer, Client, must, makeNode, makeUser } from '../../helpers/server';

describe('projects', () => {
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
  });

  describe('PUT /project/:project', () => {
    it('creates a project that list_projects shows', async () => {
      await must(api.put('/project/p-create'));
      expect((await api.get('/projects')).body).to.include('p-create');
    });
    it('returns 409 when the project exists', async () => {
      const r = await api.put('/project/p-create');
      expect(r.status).to.equal(409);
      expect(r.body.type).to.equal('DuplicateError');
    });
  });

  describe('DELETE /project/:project', () => {
    it('deletes an empty project', async () => {
      await must(api.put('/project/p-del'));
      await must(api.del('/project/p-del'));
      expect((await api.get('/projects')).body).to.not.include('p-del');
    });
    it('returns 409 (not 404) when the project does not exist', async () => {
      expect((await api.del('/project/never')).status).to.equal(409);
    });
    it('returns 409 while the project has nodes, and keeps it', async () => {
      await must(api.put('/project/p-nodes'));
      await makeNode(api, 'pn1');
      await must(api.post('/project/p-nodes/connect_node', { node: 'pn1' }));
      expect((await api.del('/project/p-nodes')).status).to.equal(409);
      expect((await api.get('/projects')).body).to.include('p-nodes');
    });
    it('returns 409 while the project owns a network', async () => {
      await must(api.put('/project/p-net'));
      await must(api.put('/network/pnet', { owner: 'p-net', access: 'p-net', net_id: '' }));
      expect((await api.del('/project/p-net')).status).to.equal(409);
      await must(api.del('/network/pnet'));
      await must(api.del('/project/p-net'));
    });
    it('returns 409 while the project is on the access list of an admin network', async () => {
      await must(api.put('/project/p-acc'));
      await must(api.put('/network/accnet', { owner: 'admin', access: 'p-acc', net_id: '' }));
      expect((await api.del('/project/p-acc')).status).to.equal(409);
      await must(api.del('/network/accnet/access/p-acc'));
      await must(api.del('/project/p-acc'));
    });
    it('is not blocked by members, and removes their membership', async () => {
      await must(api.put('/project/p-mem'));
      const u = await makeUser(api, 'pmem-user', 'pw', ['p-mem']);
      await must(api.del('/project/p-mem'));
      await must(api.put('/project/p-mem'));
      // a new project of the same name does not inherit the old members
      expect((await api.with(u).get('/project/p-mem/nodes')).status).to.equal(401);
    });
  });

  describe('POST /project/:project/connect_node and detach_node', () => {
    before(async () => {
      await must(api.put('/project/pa'));
      await must(api.put('/project/pb'));
      await makeNode(api, 'free1');
      await makeNode(api, 'free2');
    });
    it('reserves a free node for the project', async () => {
      await must(api.post('/project/pa/connect_node', { node: 'free1' }));
      expect((await api.get('/node/free1')).body.project).to.equal('pa');
      expect((await api.get('/project/pa/nodes')).body).to.deep.equal(['free1']);
      expect((await api.get('/nodes/free')).body).to.not.include('free1');
    });
    it('returns 409 when the node is not free, also for the same project', async () => {
      expect((await api.post('/project/pb/connect_node', { node: 'free1' })).status).to.equal(409);
      expect((await api.post('/project/pa/connect_node', { node: 'free1' })).status).to.equal(409);
      expect((await api.get('/node/free1')).body.project).to.equal('pa');
    });
    it('returns 404 for a missing node or project, "" too (looked up as given, docs/api-conventions.md §1)', async () => {
      expect((await api.post('/project/pa/connect_node', { node: 'nope' })).status).to.equal(404);
      expect((await api.post('/project/pa/connect_node', { node: '' })).status).to.equal(404);
      expect((await api.post('/project/nope/connect_node', { node: 'free2' })).status).to.equal(404);
      expect((await api.get('/nodes/free')).body).to.include('free2');
    });
    it('returns 409 when detaching a node of another project or a free node', async () => {
      expect((await api.post('/project/pb/detach_node', { node: 'free1' })).status).to.equal(409);
      expect((await api.post('/project/pb/detach_node', { node: 'free2' })).status).to.equal(409);
      expect((await api.get('/node/free1')).body.project).to.equal('pa');
    });
    it('returns 404 when detaching a missing node or from a missing project', async () => {
      expect((await api.post('/project/pa/detach_node', { node: 'nope' })).status).to.equal(404);
      expect((await api.post('/project/nope/detach_node', { node: 'free1' })).status).to.equal(404);
    });
    it('frees the node on detach', async () => {
      await must(api.post('/project/pa/detach_node', { node: 'free1' }));
      expect((await api.get('/node/free1')).body.project).to.equal(null);
      expect((await api.get('/nodes/free')).body).to.include('free1');
      expect((await api.get('/project/pa/nodes')).body).to.deep.equal([]);
    });
  });

  describe('project lists', () => {
    it('list_project_networks lists networks granted to the project, never public ones', async () => {
      await must(api.put('/project/pl'));
      await must(api.put('/network/pl-own', { owner: 'pl', access: 'pl', net_id: '' }));
      await must(api.put('/network/pl-admin', { owner: 'admin', access: 'pl', net_id: '' }));
      await must(api.put('/network/pl-public', { owner: 'admin', access: '', net_id: '' }));
      expect((await api.get('/project/pl/networks')).body).to.have.members(['pl-own', 'pl-admin']);
    });
    it('list_project_headnodes is empty for a project without headnodes', async () => {
      expect((await api.get('/project/pl/headnodes')).body).to.deep.equal([]);
    });
    it('returns 404 for a missing project', async () => {
      for (const what of ['nodes', 'networks', 'headnodes']) expect((await api.get(`/project/nope/${what}`)).status).to.equal(404);
    });
  });
});
