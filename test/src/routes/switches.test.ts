import { expect } from 'chai';
import { startTestServer, TestServer, Client, must, makeNode, mockSwitch, MOCK_SWITCH } from '../../helpers/server';

describe('switches and ports', () => {
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
  });

  describe('PUT /switch/:switch', () => {
    it('registers a mock switch that list_switches and show_switch show, without its password', async () => {
      await must(api.put('/switch/s1', mockSwitch));
      expect((await api.get('/switches')).body).to.include('s1');
      const show = await api.get('/switch/s1');
      expect(show.body).to.deep.equal({ name: 's1', ports: [] });
      expect((await api.get('/admin/actors/switch/s1')).text).to.not.include('switch-secret');
    });
    it('returns 409 when the switch exists, before checking fields', async () => {
      expect((await api.put('/switch/s1', { type: 'bogus' })).status).to.equal(409);
    });
    for (const [what, body] of [
      ['an unknown type', { ...mockSwitch, type: 'http://schema.massopencloud.org/haas/v0/switches/nope' }],
      ['a missing field', { type: MOCK_SWITCH, hostname: 'h', username: 'u' }],
      ['an extra field', { ...mockSwitch, port: 22 }],
      ['a non-string field', { ...mockSwitch, hostname: 1 }],
      ['a non-string type', { ...mockSwitch, type: 1 }],
      ['no type', { hostname: 'h', username: 'u', password: 'p' }],
    ] as const) {
      it(`returns 400 for ${what}, and registers nothing`, async () => {
        expect((await api.put('/switch/bad', body)).status).to.equal(400);
        expect((await api.get('/switches')).body).to.not.include('bad');
      });
    }
  });

  describe('ports', () => {
    it('registers ports with / in their names, raw or percent-encoded', async () => {
      await must(api.put('/switch/s1/port/gi1/0/3'));
      await must(api.put('/switch/s1/port/te1%2F2'));
      expect((await api.get('/switch/s1')).body.ports).to.have.members(['gi1/0/3', 'te1/2']);
    });
    it('returns 409 for an existing port, then 400 for a bad name', async () => {
      expect((await api.put('/switch/s1/port/gi1%2F0%2F3')).status).to.equal(409);
      for (const bad of ['eth0', 'gi1', 'gi1/0/3/4', 'xe1/1']) {
        expect((await api.put(`/switch/s1/port/${bad}`)).status, bad).to.equal(400);
      }
      expect((await api.get('/switch/s1')).body.ports).to.have.length(2);
    });
    it('returns 404 for ports of a missing switch', async () => {
      expect((await api.put('/switch/nope/port/gi1/0/1')).status).to.equal(404);
      expect((await api.del('/switch/nope/port/gi1/0/1')).status).to.equal(404);
      expect((await api.get('/switch/nope/port/gi1/0/1')).status).to.equal(404);
      expect((await api.get('/switch/nope')).status).to.equal(404);
    });
    it('show_port answers {} for an unwired port and 404 for a missing one', async () => {
      expect((await api.get('/switch/s1/port/gi1/0/3')).body).to.deep.equal({});
      expect((await api.get('/switch/s1/port/gi1/0/9')).status).to.equal(404);
    });
    it('returns 409 when deleting a switch that has ports', async () => {
      expect((await api.del('/switch/s1')).status).to.equal(409);
      expect((await api.get('/switches')).body).to.include('s1');
    });
  });

  describe('connect_nic and detach_nic', () => {
    before(async () => {
      await makeNode(api, 'w1', ['eth0', 'eth1']);
      await makeNode(api, 'w2', ['eth0']);
      await must(api.put('/switch/s1/port/gi1/0/4'));
      await must(api.put('/project/wp'));
    });
    it('wires a nic to a port', async () => {
      await must(api.post('/switch/s1/port/gi1/0/3/connect_nic', { node: 'w1', nic: 'eth0' }));
      expect((await api.get('/switch/s1/port/gi1%2F0%2F3')).body).to.deep.equal({ node: 'w1', nic: 'eth0', networks: {} });
      const nic = (await api.get('/node/w1')).body.nics.find((n: { label: string }) => n.label === 'eth0');
      expect(nic).to.include({ port: 'gi1/0/3', switch: 's1' });
    });
    it('checks in order: port 404, node 404, nic 404, nic wired 409, port wired 409', async () => {
      expect((await api.post('/switch/s1/port/gi1/0/9/connect_nic', { node: 'nope', nic: 'x' })).status).to.equal(404);
      expect((await api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'nope', nic: 'x' })).status).to.equal(404);
      expect((await api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'w1', nic: 'nope' })).status).to.equal(404);
      expect((await api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'w1', nic: 'eth0' })).status).to.equal(409);
      expect((await api.post('/switch/s1/port/gi1/0/3/connect_nic', { node: 'w2', nic: 'eth0' })).status).to.equal(409);
      expect((await api.get('/switch/s1/port/gi1/0/4')).body).to.deep.equal({});
      expect((await api.get('/switch/s1/port/gi1/0/3')).body.node).to.equal('w1');
    });
    it('validates the connect_nic body (400) and takes no body on detach_nic', async () => {
      expect((await api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'w2' })).status).to.equal(400);
      expect((await api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'w2', nic: 'eth0', x: 1 })).status).to.equal(400);
      expect((await api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'w2', nic: 1 })).status).to.equal(400);
      expect((await api.post('/switch/s1/port/gi1/0/3/detach_nic', { node: 'w1' })).status).to.equal(400);
      expect((await api.post('/switch/s1/port/gi1/0/3/bogus')).status).to.equal(404);
    });
    it('answers 404 for a port action it does not know, whoever asks and whatever the body', async () => {
      // An unknown path is a 404 before authentication (docs/api-conventions.md §1, Paths).
      for (const as of [null, { user: 'admin', password: 'wrong' }]) {
        const r = await api.post('/switch/s1/port/gi1/0/3/bogus', undefined, { as });
        expect(r.status, r.text).to.equal(404);
        expect(r.body.type).to.equal('NotFoundError');
      }
      expect((await api.post('/switch/s1/port/gi1/0/3/bogus', undefined, { raw: '{' })).status).to.equal(404);
      expect((await api.post('/switch/s1/port/gi1/0/3', { node: 'w1', nic: 'eth0' }, { as: null })).status).to.equal(404);
    });
    it('refuses to delete a wired port (409)', async () => {
      expect((await api.del('/switch/s1/port/gi1/0/3')).status).to.equal(409);
    });
    it('refuses to detach a port whose node is in a project (409), then detaches it once free', async () => {
      await must(api.post('/project/wp/connect_node', { node: 'w1' }));
      expect((await api.post('/switch/s1/port/gi1/0/3/detach_nic')).status).to.equal(409);
      expect((await api.get('/switch/s1/port/gi1/0/3')).body.node).to.equal('w1');
      await must(api.post('/project/wp/detach_node', { node: 'w1' }));
      await must(api.post('/switch/s1/port/gi1/0/3/detach_nic'));
      expect((await api.get('/switch/s1/port/gi1/0/3')).body).to.deep.equal({});
    });
    it('returns 404 when detaching an unwired port', async () => {
      expect((await api.post('/switch/s1/port/gi1/0/3/detach_nic')).status).to.equal(404);
    });
    it('deletes ports, then the switch', async () => {
      await must(api.put('/switch/s2', mockSwitch));
      await must(api.put('/switch/s2/port/gi1/0/1'));
      await must(api.del('/switch/s2/port/gi1/0/1'));
      expect((await api.del('/switch/s2/port/gi1/0/1')).status).to.equal(404);
      await must(api.del('/switch/s2'));
      expect((await api.get('/switches')).body).to.not.include('s2');
      expect((await api.del('/switch/s2')).status).to.equal(404);
    });
  });
});
