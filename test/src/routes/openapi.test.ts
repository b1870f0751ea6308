/**
 * GET /openapi.json and GET /docs (docs/api-conventions.md §11): a valid OpenAPI 3 document,
 * generated from the route schemas, that lists exactly the calls the server serves.
 */
import { expect } from 'chai';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv from 'ajv';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch } from '../../helpers/server';

type Doc = {
  openapi: string;
  servers: { url: string }[];
  security: Record<string, string[]>[];
  components: { securitySchemes: Record<string, { type: string; scheme: string }>; schemas: Record<string, object> };
  paths: Record<string, Record<string, { security?: unknown[]; parameters?: { name: string; in: string }[]; requestBody?: unknown; responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
};

/**
 * The calls a route of fastify's table serves, as the document names them: `:p` becomes `{p}`,
 * and a wildcard that swallows an action or a journal is one call per action.
 */
function callsOf(method: string, url: string): string[] {
  const path = url.replace(/:([A-Za-z_]+)/g, '{$1}');
  if (path === '/switch/{switch}/port/*') {
    if (method === 'POST') return ['connect_nic', 'detach_nic', 'revert'].map((a) => `POST /switch/{switch}/port/{port}/${a}`);
    return [`${method} /switch/{switch}/port/{port}`];
  }
  if (path === '/admin/switch/{switch}/port/*') return [`${method} /admin/switch/{switch}/port/{port}/clear_doubt`];
  if (path === '/admin/actors/{kind}/*') return [`${method} /admin/actors/{kind}/{id}`, `${method} /admin/actors/{kind}/{id}/journal`];
  return [`${method} ${path}`];
}

describe('GET /openapi.json and GET /docs', () => {
  let ts: TestServer;
  let anon: Client;
  let doc: Doc;
  before(async () => {
    ts = await startTestServer();
    anon = ts.api.with(null);
    const r = await must(anon.get('/openapi.json'));
    doc = r.body;
  });
  after(() => stopTestServer(ts));

  it('is a valid OpenAPI 3 document, served without credentials', async () => {
    expect(doc.openapi).to.match(/^3\./);
    // validate() dereferences in place: give it a copy.
    await SwaggerParser.validate(JSON.parse(JSON.stringify(doc)));
  });

  it('lists exactly the routes of fastify\'s table: every call once, the /v0 prefix as a second server', () => {
    const table = ts.app.routeTable;
    // Pages beside the API: its own description, the metrics and the dashboard.
    const page = (url: string) => ['/docs', '/metrics', '/ui'].some((p) => url === p || url.startsWith(`${p}/`));
    const heads = table.filter((r) => r.method === 'HEAD' && !page(r.url));
    // fastify answers HEAD for every GET by itself; the document lists the GETs.
    for (const h of heads) expect(table.some((r) => r.method === 'GET' && r.url === h.url), `HEAD ${h.url}`).to.equal(true);
    const served = table.filter((r) => r.method !== 'HEAD' && !page(r.url));
    const unprefixed = served.filter((r) => !r.url.startsWith('/v0/'));
    const prefixed = served.filter((r) => r.url.startsWith('/v0/')).map((r) => `${r.method} ${r.url.slice(3)}`);
    // Every call but the document itself is served under both prefixes.
    expect(unprefixed.map((r) => `${r.method} ${r.url}`).filter((k) => k !== 'GET /openapi.json').sort()).to.deep.equal([...prefixed].sort());
    expect(doc.servers.map((s) => s.url)).to.deep.equal(['/', '/v0']);

    // GET /health is the Gate's, in front of fastify.
    const fromTable = new Set([...unprefixed.flatMap((r) => callsOf(r.method, r.url)), 'GET /health']);
    const fromDoc = new Set(Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)));
    expect([...fromDoc].filter((k) => !fromTable.has(k)), 'documented but not served').to.deep.equal([]);
    expect([...fromTable].filter((k) => !fromDoc.has(k)), 'served but not documented').to.deep.equal([]);
    // The calls this server added lately are there too.
    for (const k of ['PUT /node/{node}/metadata/{label}', 'DELETE /node/{node}/metadata/{label}', 'POST /switch/{switch}/port/{port}/revert']) expect(fromDoc.has(k), k).to.equal(true);
  });

  it('has request schemas that JSON Schema\'s meta-schema accepts, on every route (the service does not check them at start)', () => {
    const ajv = new Ajv({ strict: true });
    let checked = 0;
    for (const r of ts.app.routeTable) {
      const schema = r.schema as Record<string, unknown> | undefined;
      for (const part of ['body', 'params', 'querystring', 'headers'] as const) {
        if (schema?.[part] === undefined) continue;
        const ok = ajv.validateSchema(schema[part] as object);
        expect(ok, `${r.method} ${r.url} ${part}: ${ajv.errorsText(ajv.errors)}`).to.equal(true);
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(100);
    expect(ajv.validateSchema({ type: 'object', properties: { n: { type: 'strng' } } }), 'a broken schema is caught').to.equal(false);
  });

  it('declares basic authentication for every call but itself', () => {
    expect(doc.components.securitySchemes.basic).to.deep.include({ type: 'http', scheme: 'basic' });
    expect(doc.security).to.deep.equal([{ basic: [] }]);
    const open = ['/openapi.json', '/health'];
    for (const p of open) expect(doc.paths[p].get.security, p).to.deep.equal([]);
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) if (!open.includes(p)) expect(op.security, `${m} ${p}`).to.equal(undefined);
    }
  });

  it('documents each call\'s success and its errors with the error body', () => {
    const errorRef = { $ref: '#/components/schemas/HiltError' };
    expect(doc.components.schemas.HiltError).to.deep.include({ required: ['type', 'msg'] });
    // GET /health answers its status, not the error body: 200 active, 503 standby.
    expect(Object.keys(doc.paths['/health'].get.responses)).to.deep.equal(['200', '503']);
    for (const [p, ops] of Object.entries(doc.paths)) {
      if (p === '/health') continue;
      for (const [m, op] of Object.entries(ops)) {
        const codes = Object.keys(op.responses);
        expect(codes.some((c) => c === '200' || c === '202' || c === '101'), `${m} ${p} success`).to.equal(true);
        const errors = p === '/openapi.json' ? ['400', '500'] : ['400', '401', '500'];
        for (const c of errors) expect(codes, `${m} ${p}`).to.include(c);
        for (const c of codes.filter((x) => Number(x) >= 400)) {
          expect(op.responses[c].content!['application/json'].schema, `${m} ${p} ${c}`).to.deep.equal(errorRef);
        }
      }
    }
    const ops = doc.paths;
    expect(Object.keys(ops['/node/{node}/nic/{nic}/connect_network'].post.responses)).to.include.members(['202', '404', '409']);
    expect(Object.keys(ops['/node/{node}/power_cycle'].post.responses)).to.include('502');
    expect(ops['/project/{project}/connect_node'].post.requestBody).to.deep.include({ required: true });
    expect(ops['/project/{project}'].put.requestBody, 'a call without a body documents none').to.equal(undefined);
    expect(ops['/network/{network}/attachments'].get.parameters!.map((x) => `${x.in}:${x.name}`)).to.have.members(['query:project', 'path:network']);
  });

  it('describes the answers the server actually gives', async () => {
    const api = ts.api;
    await must(api.put('/project/oa'));
    await makeNode(api, 'oa-n', ['eth0']);
    await must(api.put('/node/oa-n/metadata/rack', { value: 'r1' }));
    await must(api.put('/switch/oa-s', mockSwitch));
    await must(api.put('/switch/oa-s/port/gi1/0/1'));
    await must(api.post('/switch/oa-s/port/gi1/0/1/connect_nic', { node: 'oa-n', nic: 'eth0' }));
    await must(api.post('/project/oa/connect_node', { node: 'oa-n' }));
    await must(api.put('/network/oa-w', { owner: 'oa', access: 'oa', net_id: '' }));
    const id = (await must(api.post('/node/oa-n/nic/eth0/connect_network', { network: 'oa-w' }), 202)).body.status_id;
    const ajv = new Ajv({ strict: false });
    ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    ajv.addSchema({ ...doc, $id: 'doc' } as object, 'doc');
    const check = async (path: string, docPath: string, method = 'get', status = 200) => {
      const r = await api.call(method.toUpperCase(), path);
      expect(r.status, r.text).to.equal(status);
      const schema = doc.paths[docPath][method].responses[String(status)].content!['application/json'].schema;
      const validate = ajv.compile({ $ref: `doc#/paths/${docPath.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/responses/${status}/content/application~1json/schema` });
      expect(validate(r.body), `${path}: ${JSON.stringify(validate.errors)} against ${JSON.stringify(schema)}`).to.equal(true);
    };
    await check('/node/oa-n', '/node/{node}');
    await check('/network/oa-w', '/network/{network}');
    await check('/networks', '/networks');
    await check(`/networking_action/${id}`, '/networking_action/{status_id}');
    await check('/node/oa-n/networking_actions', '/node/{node}/networking_actions');
    await check('/switch/oa-s', '/switch/{switch}');
    await check('/health', '/health');
    await check('/switch/oa-s/port/gi1/0/1', '/switch/{switch}/port/{port}');
    await check('/admin/actors/node/oa-n', '/admin/actors/{kind}/{id}');
    await check('/admin/actors/node/oa-n/journal', '/admin/actors/{kind}/{id}/journal');
    await check('/node/missing', '/node/{node}', 'get', 404);
    await check('/project/oa', '/project/{project}', 'put', 409);
  });

  it('serves the browsable page without credentials, and still needs credentials for the API', async () => {
    const page = await anon.get('/docs');
    expect(page.status).to.equal(200);
    expect(String(page.headers['content-type'])).to.match(/text\/html/);
    expect(page.text).to.match(/swagger/i);
    expect((await anon.get('/projects')).status).to.equal(401);
    expect((await ts.api.get('/v0/openapi.json')).status).to.equal(404);
    // The document reveals no data: nothing registered above appears in it.
    expect(JSON.stringify((await must(anon.get('/openapi.json'))).body)).to.not.match(/oa-n|oa-w|admin-secret/);
  });

  it('names every built-in switch type in switch_register\'s body, the data-centre families among them', () => {
    const body = doc.paths['/switch/{switch}']!.put!.requestBody as { content: Record<string, { schema: { properties: { type: { description: string } } } }> };
    const text = JSON.stringify(body);
    for (const t of ['nexus', 'arista_eos', 'dellos10', 'sonic', 'junos', 'cumulus_nvue']) expect(text).to.include(`/v0/switches/${t}`);
  });
});
