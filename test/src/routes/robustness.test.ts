/**
 * Nothing a client sends may produce a 5xx or take the service down (docs/api-conventions.md §1).
 * Every route gets a battery of malformed bodies, paths and query strings.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch } from '../../helpers/server';

const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
const BODIES: (string | Buffer)[] = [
  '', '{', '}', '[]', '[{}]', 'null', 'true', '1', '"x"', '{"a":1}', '{"node":{}}', '{"node":[]}',
  '{"node":"n","nic":"e","network":"w","channel":"vlan/1","project":"p","password":"x","obm":{},"type":"t"}',
  '{"obm":{"type":{"nested":true},"host":[],"user":null,"password":1}}',
  '{"obm":{"type":"http://schema.massopencloud.org/haas/v0/obm/mock","host":"h","user":"u","password":"p","x":{"y":1}}}',
  '{"obm":{"type":"http://schema.massopencloud.org/haas/v0/obm/mock","host":"h","user":"u","password":"p"},"metadata":' + deep(50) + '}',
  deep(10_000), '{"owner":"admin","access":"","net_id":"99999999999999999999"}', '{"owner":"admin","access":"","net_id":"1e3"}',
  '{"password":"' + 'x'.repeat(100_000) + '"}', '{"__proto__":{"isAdmin":true}}', '{"constructor":{"prototype":{}}}',
  Buffer.from([0xff, 0xfe, 0x00]), '{"a":"\\ud800"}', '\u0000', '{"is-admin":true,"is_admin":false,"password":"p"}',
];

const ROUTES: [string, string][] = [
  ['PUT', '/project/rp'], ['DELETE', '/project/rp'], ['POST', '/project/rp/connect_node'], ['POST', '/project/rp/detach_node'],
  ['PUT', '/node/rn'], ['DELETE', '/node/rn'], ['PUT', '/node/rn/nic/e'], ['DELETE', '/node/rn/nic/e'],
  ['POST', '/node/rn/power_cycle'], ['POST', '/node/rn/power_off'],
  ['PUT', '/switch/rs'], ['DELETE', '/switch/rs'], ['PUT', '/switch/rs/port/gi1/0/1'], ['DELETE', '/switch/rs/port/gi1/0/1'],
  ['POST', '/switch/rs/port/gi1/0/1/connect_nic'], ['POST', '/switch/rs/port/gi1/0/1/detach_nic'],
  ['PUT', '/network/rw'], ['DELETE', '/network/rw'], ['PUT', '/network/rw/access/rp'], ['DELETE', '/network/rw/access/rp'],
  ['PUT', '/auth/basic/user/ru'], ['DELETE', '/auth/basic/user/ru'], ['POST', '/auth/basic/user/ru/add_project'],
  ['POST', '/auth/basic/user/ru/remove_project'], ['PATCH', '/auth/basic/user/ru'],
  ['PUT', '/headnode/rh'], ['DELETE', '/headnode/rh'], ['POST', '/headnode/rh/start'], ['POST', '/headnode/rh/stop'],
  ['PUT', '/headnode/rh/hnic/e'], ['DELETE', '/headnode/rh/hnic/e'], ['POST', '/headnode/rh/hnic/e/connect_network'],
  ['POST', '/headnode/rh/hnic/e/detach_network'],
];

const GETS = [
  '/projects', '/nodes/all', '/nodes/free', '/node/rn', '/switches', '/switch/rs', '/switch/rs/port/gi1/0/1', '/networks',
  '/network/rw', '/network/rw/attachments', '/project/rp/nodes', '/admin/actors', '/admin/actors/node/rn/journal',
  '/headnode/rh', '/headnode_images', '/project/rp/headnodes',
];

const ODD_PATHS = [
  '/node/%', '/node/%zz', '/node/%00', '/node/' + 'x'.repeat(5000), '/project/%2e%2e', '/switch/rs/port/', '/switch/rs/port/%2F',
  '/network/rw/attachments?project=rp&project=rp', '/network/rw/attachments?project[x]=1', '/nodes/all?%zz', '/node/a/nic/',
  '//projects', '/v0/v0/projects', '/projects/../projects',
];

describe('robustness: no client input yields a 5xx', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/rp'));
    await makeNode(api, 'rn', ['e']);
    await must(api.put('/switch/rs', mockSwitch));
    await must(api.put('/switch/rs/port/gi1/0/1'));
    await must(api.put('/network/rw', { owner: 'rp', access: 'rp', net_id: '' }));
    await must(api.put('/auth/basic/user/ru', { password: 'p' }));
  });

  it('answers every malformed body on every route with a 4xx or a success', async () => {
    for (const [method, path] of ROUTES) {
      for (const raw of BODIES) {
        for (const as of [undefined, null]) {
          const r = await api.call(method, path, { raw, as, headers: { 'content-type': 'application/json' } });
          expect(r.status, `${method} ${path} ${String(raw).slice(0, 60)}`).to.be.below(500);
          if (r.status >= 400 && r.text) expect(r.body, `${method} ${path}`).to.have.property('type');
        }
      }
    }
  });

  it('answers odd paths and query strings with a 4xx or a success, errors with the JSON error body', async () => {
    for (const path of [...GETS.map((p) => p + '?bogus=1'), ...ODD_PATHS, '/node/%E0%A4%A']) {
      const r = await api.get(path);
      expect(r.status, path).to.be.below(500);
      if (r.status >= 400 && r.status !== 404) expect(r.body, path).to.have.keys('type', 'msg');
    }
    expect((await api.get('/node/%zz')).body).to.deep.include({ type: 'BadArgumentError' });
  });

  it('is still up and consistent afterwards', async () => {
    expect((await api.get('/projects')).status).to.equal(200);
    // The __proto__ body must not have made anyone an admin.
    await must(api.put('/auth/basic/user/proto', { password: 'p' }));
    expect((await api.with({ user: 'proto', password: 'p' }).get('/projects')).status).to.equal(401);
    for (const path of GETS) expect((await api.get(path)).status, path).to.be.below(500);
  });
});

describe('names that are built-in JavaScript object properties', function () {
  this.timeout(30_000);
  const NAMES = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'];

  it('are ordinary names for nics, and nothing for ports and switch types; they survive a restart', async () => {
    let ts = await startTestServer();
    let api = ts.api;
    await makeNode(api, 'pn');
    await must(api.put('/switch/ps', mockSwitch));
    await must(api.put('/switch/ps/port/gi1/0/1'));
    for (const n of NAMES) {
      expect((await api.put('/switch/px', { type: n, hostname: 'h', username: 'u', password: 'p' })).status, n).to.equal(400);
      expect((await api.del(`/node/pn/nic/${n}`)).status, n).to.equal(404);
      expect((await api.post('/switch/ps/port/gi1/0/1/connect_nic', { node: 'pn', nic: n })).status, n).to.equal(404);
      expect((await api.get(`/switch/ps/port/${n}`)).status, n).to.equal(404);
      expect((await api.del(`/switch/ps/port/${n}`)).status, n).to.equal(404);
      expect((await api.put(`/switch/ps/port/${n}`)).status, n).to.equal(400); // not a mock port name
    }
    expect((await api.get('/switch/ps/port/gi1/0/1')).body).to.deep.equal({});
    for (const n of NAMES) await must(api.put(`/node/pn/nic/${n}`, { macaddr: `m-${n}` }));
    await must(api.post('/switch/ps/port/gi1/0/1/connect_nic', { node: 'pn', nic: '__proto__' }));
    const before = (await api.get('/node/pn')).body;
    expect(before.nics.map((x: { label: string }) => x.label)).to.have.members(NAMES);
    await stopTestServer(ts, false);
    ts = await startTestServer({}, {}, ts.dataDir);
    api = ts.api;
    expect((await api.get('/node/pn')).body).to.deep.equal(before);
    expect((await api.get('/switch/ps/port/gi1/0/1')).body).to.include({ node: 'pn', nic: '__proto__' });
    for (const n of NAMES.filter((x) => x !== '__proto__')) await must(api.del(`/node/pn/nic/${n}`));
    await stopTestServer(ts);
  });
});
