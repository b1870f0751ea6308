import { expect } from 'chai';
import { gunzipSync } from 'node:zlib';
import { startTestServer, TestServer, Client, must, makeNode, makeUser, obm, mockSwitch, MOCK_OBM, IPMI_OBM, Creds } from '../../helpers/server';

describe('nodes and nics', () => {
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/np'));
    member = await makeUser(api, 'np-member', 'pw', ['np']);
  });

  describe('PUT /node/:node', () => {
    it('registers a node with an ipmi or a mock OBM; the node is free', async () => {
      await must(api.put('/node/reg-ipmi', { obm: obm('127.0.0.1:6231', IPMI_OBM) }));
      await must(api.put('/node/reg-mock', { obm: obm('bmc:623', MOCK_OBM) }));
      expect((await api.get('/nodes/free')).body).to.include.members(['reg-ipmi', 'reg-mock']);
      expect((await api.get('/node/reg-ipmi')).body).to.deep.equal({ name: 'reg-ipmi', project: null, nics: [] });
    });
    it('returns 409 when the node exists, before checking the OBM fields', async () => {
      const r = await api.put('/node/reg-ipmi', { obm: { type: 'bogus' } });
      expect(r.status).to.equal(409);
    });
    for (const [what, o] of [
      ['an unknown type', { ...obm(), type: 'http://schema.massopencloud.org/haas/v0/obm/nope' }],
      ['a missing field', { type: MOCK_OBM, host: 'h', user: 'u' }],
      ['an extra field', { ...obm(), port: '623' }],
      ['a non-string field', { ...obm(), host: 5 }],
      ['no type', { host: 'h', user: 'u', password: 'p' }],
    ] as const) {
      it(`returns 400 for OBM settings with ${what}, and registers nothing`, async () => {
        const r = await api.put('/node/bad-obm', { obm: o });
        expect(r.status).to.equal(400);
        expect(r.body.type).to.equal('BadArgumentError');
        expect((await api.get('/node/bad-obm')).status).to.equal(404);
      });
    }
    it('accepts an optional metadata object and shows it', async () => {
      await must(api.put('/node/meta', { obm: obm(), metadata: { rack: 'r1' } }));
      expect((await api.get('/node/meta')).body.metadata).to.deep.equal({ rack: 'r1' });
    });
    it('refuses nested or oversized metadata (400): it is flat label/value pairs', async () => {
      expect((await api.put('/node/meta2', { obm: obm(), metadata: { a: { b: 1 } } })).status).to.equal(400);
      expect((await api.put('/node/meta2', { obm: obm(), metadata: { a: [1] } })).status).to.equal(400);
      const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
      expect((await api.put('/node/meta2', { obm: obm(), metadata: many })).status).to.equal(400);
      expect((await api.get('/node/meta2')).status).to.equal(404);
    });
    it('never returns the OBM password', async () => {
      const show = await api.get('/node/reg-ipmi');
      expect(show.text).to.not.include('obm-secret');
      const inspect = await api.get('/admin/actors/node/reg-ipmi');
      expect(inspect.status).to.equal(200);
      expect(inspect.text).to.not.include('obm-secret');
      const journal = await api.get('/admin/actors/node/reg-ipmi/journal');
      expect(journal.text).to.not.include('obm-secret');
    });
  });

  describe('DELETE /node/:node', () => {
    it('deletes a free node without nics', async () => {
      await makeNode(api, 'del1');
      await must(api.del('/node/del1'));
      expect((await api.get('/node/del1')).status).to.equal(404);
      expect((await api.get('/nodes/all')).body).to.not.include('del1');
    });
    it('returns 404 for a missing node', async () => {
      expect((await api.del('/node/nope')).status).to.equal(404);
    });
    it('returns 409 for a node in a project, then for a node with nics', async () => {
      await makeNode(api, 'del2', ['eth0']);
      await must(api.post('/project/np/connect_node', { node: 'del2' }));
      expect((await api.del('/node/del2')).status).to.equal(409);
      await must(api.post('/project/np/detach_node', { node: 'del2' }));
      expect((await api.del('/node/del2')).status).to.equal(409);
      expect((await api.get('/node/del2')).body.nics).to.have.length(1);
      await must(api.del('/node/del2/nic/eth0'));
      await must(api.del('/node/del2'));
    });
  });

  describe('nics', () => {
    before(async () => {
      await makeNode(api, 'nicnode');
      await makeNode(api, 'other');
      await must(api.put('/switch/nsw', mockSwitch));
      await must(api.put('/switch/nsw/port/gi1/0/1'));
    });
    it('registers a nic, keeping macaddr verbatim', async () => {
      await must(api.put('/node/nicnode/nic/eth0', { macaddr: 'Not A MAC ✓' }));
      expect((await api.get('/node/nicnode')).body.nics).to.deep.equal([
        { label: 'eth0', macaddr: 'Not A MAC ✓', networks: {}, port: null, switch: null },
      ]);
    });
    it('returns 409 for a nic name the node already has; names are per node', async () => {
      expect((await api.put('/node/nicnode/nic/eth0', { macaddr: 'x' })).status).to.equal(409);
      await must(api.put('/node/other/nic/eth0', { macaddr: 'x' }));
    });
    it('returns 404 for a nic of a missing node', async () => {
      expect((await api.put('/node/nope/nic/eth0', { macaddr: 'x' })).status).to.equal(404);
      expect((await api.del('/node/nope/nic/eth0')).status).to.equal(404);
      expect((await api.del('/node/nicnode/nic/nope')).status).to.equal(404);
    });
    it('deleting a wired nic frees its port', async () => {
      await must(api.put('/node/nicnode/nic/eth1', { macaddr: 'm1' }));
      await must(api.post('/switch/nsw/port/gi1/0/1/connect_nic', { node: 'nicnode', nic: 'eth1' }));
      expect((await api.get('/switch/nsw/port/gi1/0/1')).body).to.deep.equal({ node: 'nicnode', nic: 'eth1', networks: {} });
      await must(api.del('/node/nicnode/nic/eth1'));
      expect((await api.get('/switch/nsw/port/gi1/0/1')).body).to.deep.equal({});
      // the port can be wired again
      await must(api.post('/switch/nsw/port/gi1/0/1/connect_nic', { node: 'other', nic: 'eth0' }));
    });
  });

  describe('GET /node/:node and GET /nodes/:is_free', () => {
    before(async () => {
      await makeNode(api, 'shown', ['eth0']);
      await must(api.post('/project/np/connect_node', { node: 'shown' }));
    });
    it('shows port and switch to admins only', async () => {
      const asMember = await api.with(member).get('/node/shown');
      expect(asMember.status).to.equal(200);
      expect(asMember.body.nics[0]).to.have.keys('label', 'macaddr', 'networks');
      expect((await api.get('/node/shown')).body.nics[0]).to.include.keys('port', 'switch');
    });
    it('shows a free node to any authenticated user, an assigned one only to its project', async () => {
      const stranger = await makeUser(api, 'np-stranger', 'pw');
      expect((await api.with(stranger).get('/node/meta')).status).to.equal(200);
      expect((await api.with(stranger).get('/node/shown')).status).to.equal(401);
    });
    it('returns 404 for a missing node', async () => {
      expect((await api.get('/node/nope')).status).to.equal(404);
    });
    it('gzips a large node list for clients that accept it, and the list stays current', async () => {
      await Promise.all(Array.from({ length: 600 }, (_, i) => must(api.put(`/node/many-${i}`, { obm: obm() }))));
      const r = await api.get('/nodes/all', { headers: { 'accept-encoding': 'gzip, deflate' } });
      expect(r.headers['content-encoding']).to.equal('gzip');
      expect(JSON.parse(gunzipSync(r.raw).toString('utf8'))).to.include('many-599');
      await must(api.put('/node/many-600', { obm: obm() }));
      const plain = await api.get('/nodes/all');
      expect(plain.headers['content-encoding']).to.equal(undefined);
      expect(plain.body).to.include('many-600');
      const gz = await api.get('/nodes/all', { headers: { 'accept-encoding': 'gzip' } });
      expect(JSON.parse(gunzipSync(gz.raw).toString('utf8'))).to.include('many-600');
      // A client that says gzip is not acceptable (q=0, RFC 9110 §12.5.3) gets plain JSON.
      for (const refuses of ['gzip;q=0', 'deflate, gzip; q=0.000', 'GZIP;Q=0, identity']) {
        const r2 = await api.get('/nodes/all', { headers: { 'accept-encoding': refuses } });
        expect(r2.headers['content-encoding'], refuses).to.equal(undefined);
        expect(r2.body, refuses).to.include('many-600');
      }
      expect((await api.get('/nodes/all', { headers: { 'accept-encoding': 'gzip;q=0.5' } })).headers['content-encoding']).to.equal('gzip');
    });
    it('lists all or free nodes, without duplicates', async () => {
      const all = (await api.get('/nodes/all')).body as string[];
      const free = (await api.get('/nodes/free')).body as string[];
      expect(all).to.include.members(['shown', 'meta']);
      expect(free).to.include('meta').and.not.include('shown');
      expect(new Set(all).size).to.equal(all.length);
      expect((await api.get('/nodes/busy')).status).to.equal(400);
    });
  });

  describe('power (mock OBM)', () => {
    before(async () => {
      await makeNode(api, 'pw-free');
      await makeNode(api, 'pw-owned');
      await must(api.post('/project/np/connect_node', { node: 'pw-owned' }));
    });
    it('power_cycle turns the node on, power_off turns it off, power_status tells', async () => {
      await must(api.post('/node/pw-free/power_cycle'));
      expect((await api.get('/node/pw-free/power_status')).body).to.deep.equal({ power_status: 'on' });
      await must(api.post('/node/pw-free/power_off'));
      expect((await api.get('/node/pw-free/power_status')).body).to.deep.equal({ power_status: 'off' });
      await must(api.post('/node/pw-free/power_off'));
    });
    it('shows a mock BMC\'s power state and boot device to admins in node inspection', async () => {
      await must(api.post('/node/pw-free/power_cycle'));
      const r = await api.get('/admin/actors/node/pw-free');
      expect(r.body.mockBmc).to.include({ power: 'on', bootdev: 'pxe' });
      await must(api.post('/node/pw-free/power_off'));
      expect((await api.get('/admin/actors/node/pw-free')).body.mockBmc.power).to.equal('off');
    });
    it('accepts {force: true} for power_cycle and rejects other keys', async () => {
      await must(api.post('/node/pw-free/power_cycle', { force: true }));
      expect((await api.post('/node/pw-free/power_cycle', { force: 'yes' })).status).to.equal(400);
      expect((await api.post('/node/pw-free/power_off', { force: true })).status).to.equal(400);
    });
    it('a free node is the admin\'s; an assigned node its project\'s too', async () => {
      expect((await api.with(member).post('/node/pw-free/power_cycle')).status).to.equal(401);
      await must(api.with(member).post('/node/pw-owned/power_cycle'));
      await must(api.with(member).post('/node/pw-owned/power_off'));
      expect((await api.post('/node/nope/power_off')).status).to.equal(404);
    });
    it('power_on turns the node on (again: no change); it takes no body', async () => {
      await must(api.post('/node/pw-free/power_off'));
      await must(api.post('/node/pw-free/power_on'));
      expect(ts.mockObm.state(obm().host).power).to.equal('on');
      await must(api.post('/node/pw-free/power_on'));
      expect((await api.get('/node/pw-free/power_status')).body).to.deep.equal({ power_status: 'on' });
      expect((await api.post('/node/pw-free/power_on', { force: true })).status).to.equal(400);
      expect((await api.with(member).post('/node/pw-free/power_on')).status).to.equal(401);
      await must(api.with(member).post('/node/pw-owned/power_on'));
      expect((await api.post('/node/nope/power_on')).status).to.equal(404);
    });
    it('boot_device sets pxe, disk or none on the BMC; another device is a 400 after the checks of §3', async () => {
      for (const dev of ['disk', 'none', 'pxe']) {
        await must(api.put('/node/pw-free/boot_device', { bootdev: dev }));
        expect(ts.mockObm.state(obm().host).bootdev).to.equal(dev);
      }
      const bad = await api.put('/node/pw-free/boot_device', { bootdev: 'cdrom' });
      expect(bad.status).to.equal(400);
      expect(bad.body).to.deep.equal({ type: 'BadArgumentError', msg: 'invalid boot device "cdrom": expected one of pxe, disk, none' });
      expect(ts.mockObm.state(obm().host).bootdev).to.equal('pxe');
      // the node's existence and the caller's right come first
      expect((await api.put('/node/nope/boot_device', { bootdev: 'cdrom' })).status).to.equal(404);
      expect((await api.with(member).put('/node/pw-free/boot_device', { bootdev: 'cdrom' })).status).to.equal(401);
      await must(api.with(member).put('/node/pw-owned/boot_device', { bootdev: 'disk' }));
      // the body's shape is checked first of all (§2)
      for (const body of [{}, { bootdev: 1 }, { bootdev: null }, { bootdev: 'pxe', persistent: true }]) {
        expect((await api.with(null).put('/node/nope/boot_device', body)).status, JSON.stringify(body)).to.equal(400);
      }
    });
  });
});
