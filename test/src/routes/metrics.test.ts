/**
 * GET /metrics: Prometheus's text format, admin only unless HILT_METRICS_OPEN; its counters and
 * histograms move as requests, network operations (done and failed), driver calls, switch
 * sessions and commits happen, and its gauges show what is there now.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch } from '../../helpers/server';
import { checkHistograms, Exposition, parseExposition, parseWithPrometheusClient, value } from '../../helpers/prometheus';
import { until } from '../../helpers/wait';

describe('GET /metrics', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const scrape = async (): Promise<Exposition> => {
    const r = await must(api.get('/metrics'));
    expect(r.headers['content-type']).to.equal('text/plain; version=0.0.4; charset=utf-8');
    return parseExposition(r.text);
  };
  const status = async (id: string) => (await must(api.get(`/networking_action/${id}`))).body.status as string;

  before(async () => {
    ts = await startTestServer({ mockSwitchFailPorts: ['s1/gi1/0/9'], mockSwitchDelayMs: 300, headnodeDriver: 'mock' });
    api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/switch/s1', mockSwitch));
    for (const [node, port] of [['n1', 'gi1/0/1'], ['n2', 'gi1/0/9']]) {
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/s1/port/${port}`));
      await must(api.post(`/switch/s1/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post('/project/p/connect_node', { node }));
    }
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
  });
  after(() => stopTestServer(ts));

  it('moves its counters and histograms with requests, network operations, driver calls, sessions and commits', async () => {
    const before = await scrape();
    const route = { route: '/node/:node/nic/:nic/connect_network', method: 'POST' };
    const ok = (await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'w' }), 202)).body.status_id;
    const failing = (await must(api.post('/node/n2/nic/eth0/connect_network', { network: 'w' }), 202)).body.status_id;
    // Accepted, not finished yet (the mock switch takes 300 ms per operation).
    const during = await scrape();
    expect(value(during, 'hilt_network_operations_pending', { switch: 's1' })).to.equal(2);
    expect(value(during, 'hilt_network_operations_accepted_total', { switch: 's1', type: 'connect' }) - value(before, 'hilt_network_operations_accepted_total', { switch: 's1', type: 'connect' })).to.equal(2);
    await until('both operations to finish', async () => (await status(ok)) !== 'PENDING' && (await status(failing)) !== 'PENDING');
    expect(await status(ok)).to.equal('DONE');
    expect(await status(failing)).to.equal('ERROR');
    await must(api.get('/node/n1/power_status'));
    await must(api.get('/v0/node/n1/power_status'));
    await api.with(null).get('/nodes/free');
    await api.get('/no/such/call');
    // The session closes once the switch's queue is empty.
    await until('the switch session to close', async () => value(await scrape(), 'hilt_switch_session_operations_count', { switch: 's1' }) > value(before, 'hilt_switch_session_operations_count', { switch: 's1' }));
    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);

    expect(moved('hilt_http_requests_total', { ...route, status: '202' })).to.equal(2);
    expect(moved('hilt_http_request_duration_seconds_count', route)).to.equal(2);
    expect(moved('hilt_http_request_duration_seconds_sum', route)).to.be.greaterThan(0);
    expect(moved('hilt_http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).to.equal(2);
    // One call, with or without the /v0 prefix; no route: unmatched, by status.
    expect(moved('hilt_http_requests_total', { route: '/node/:node/power_status', method: 'GET', status: '200' })).to.equal(2);
    expect(moved('hilt_http_requests_total', { route: '/nodes/:is_free', method: 'GET', status: '401' })).to.equal(1);
    expect(moved('hilt_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' })).to.equal(1);

    expect(value(after, 'hilt_network_operations_pending', { switch: 's1' })).to.equal(0);
    expect(moved('hilt_network_operations_finished_total', { switch: 's1', type: 'connect', status: 'DONE' })).to.equal(1);
    expect(moved('hilt_network_operations_finished_total', { switch: 's1', type: 'connect', status: 'ERROR' })).to.equal(1);
    expect(moved('hilt_network_operation_duration_seconds_count', { switch: 's1' })).to.equal(2);
    // Both took the mock switch's 300 ms at least.
    expect(moved('hilt_network_operation_duration_seconds_sum', { switch: 's1' })).to.be.at.least(0.6);
    expect(moved('hilt_network_operation_duration_seconds_bucket', { switch: 's1', le: '0.25' })).to.equal(0);

    const sw = { kind: 'switch', driver: 'mock' };
    expect(moved('hilt_driver_calls_total', { ...sw, call: 'set_native', outcome: 'ok' })).to.equal(1);
    // The injected failure, and setting the port back, which fails the same way.
    expect(moved('hilt_driver_calls_total', { ...sw, outcome: 'error' })).to.be.at.least(1);
    expect(moved('hilt_driver_calls_total', { ...sw, call: 'login', outcome: 'ok' })).to.be.at.least(1);
    expect(moved('hilt_driver_call_duration_seconds_count', { ...sw, call: 'set_native' })).to.be.at.least(2);
    expect(moved('hilt_driver_call_duration_seconds_sum', { ...sw, call: 'set_native' })).to.be.at.least(0.3);
    expect(moved('hilt_driver_calls_total', { kind: 'obm', driver: 'mock', call: 'power_status', outcome: 'ok' })).to.equal(2);
    expect(moved('hilt_switch_sessions_opened_total', { switch: 's1' })).to.be.at.least(1);
    expect(moved('hilt_switch_session_operations_sum', { switch: 's1' })).to.be.at.least(2);
    expect(moved('hilt_device_queue_calls_total', { queue: 'switch' })).to.be.at.least(2);
    expect(moved('hilt_device_queue_calls_total', { queue: 'obm', outcome: 'ok' })).to.equal(2);

    // Each operation: accepted and outcome in the nic, the port's record on success.
    expect(moved('hilt_storage_commits_total', { kind: 'nic', outcome: 'ok' })).to.equal(4);
    expect(moved('hilt_storage_commit_duration_seconds_count', { kind: 'nic' })).to.equal(4);
    expect(moved('hilt_storage_events_total', { kind: 'port' })).to.be.at.least(1);
  });

  it('drops a switch\'s series once the switch is deleted (a deleted switch\'s name would stay in every scrape)', async () => {
    const ofS9 = (e: Exposition) => e.samples.filter((x) => x.labels.switch === 's9').map((x) => x.name);
    await must(api.put('/switch/s9', mockSwitch));
    await makeNode(api, 'n9', ['eth0']);
    await must(api.put('/switch/s9/port/gi1/0/1'));
    await must(api.post('/switch/s9/port/gi1/0/1/connect_nic', { node: 'n9', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n9' }));
    for (const call of ['connect_network', 'detach_network']) {
      const id = (await must(api.post(`/node/n9/nic/eth0/${call}`, { network: 'w' }), 202)).body.status_id;
      await until(`${call} to finish`, async () => (await status(id)) === 'DONE');
    }
    await until('the switch session to close', async () => value(await scrape(), 'hilt_switch_session_operations_count', { switch: 's9' }) > 0);
    expect(ofS9(await scrape())).to.include.members([
      'hilt_network_operations_accepted_total', 'hilt_network_operations_finished_total', 'hilt_network_operation_duration_seconds_count',
      'hilt_switch_sessions_opened_total', 'hilt_switch_session_operations_count', 'hilt_network_operations_pending',
    ]);
    await must(api.post('/project/p/detach_node', { node: 'n9' }));
    await must(api.post('/switch/s9/port/gi1/0/1/detach_nic'));
    await must(api.del('/switch/s9/port/gi1/0/1'));
    await must(api.del('/switch/s9'));
    expect(ofS9(await scrape())).to.deep.equal([]);
    // Another switch's series stay.
    expect(value(await scrape(), 'hilt_network_operations_accepted_total', { switch: 's1' })).to.be.greaterThan(0);
  });

  it('shows what is there now: live actors and mailboxes, device queues, the store\'s size, the release, that it is active, the process', async () => {
    const m = await scrape();
    expect(value(m, 'hilt_actors_live', { kind: 'node' })).to.be.at.least(1);
    expect(m.samples.some((s) => s.name === 'hilt_actor_mailbox_messages' && s.labels.kind === 'port')).to.equal(true);
    expect(m.samples.some((s) => s.name === 'hilt_actor_mailbox_max_messages' && s.labels.kind === 'nic')).to.equal(true);
    expect(value(m, 'hilt_device_queue_depth', { queue: 'obm' })).to.equal(0);
    // The headnode driver is asked for its images at start.
    expect(value(m, 'hilt_driver_calls_total', { kind: 'headnode', driver: 'mock', call: 'list_images', outcome: 'ok' })).to.be.at.least(1);
    expect(value(m, 'hilt_storage_size_bytes')).to.be.greaterThan(0);
    // LMDB tells the bytes in use within its fixed map; PostgreSQL has none: only the size of hilt's tables.
    if (ts.config.storage === 'lmdb') expect(value(m, 'hilt_storage_used_bytes')).to.be.greaterThan(0);
    else expect(m.samples.some((s) => s.name === 'hilt_storage_used_bytes')).to.equal(false);
    // This process serves the API (a standby's metrics: test/src/service/standby.test.ts).
    expect(value(m, 'hilt_active')).to.equal(1);
    expect(m.samples.find((s) => s.name === 'hilt_info')!.labels).to.deep.equal({ version: '0.1.0', storage: ts.config.storage });
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(m.types.has(name), name).to.equal(true);
    }
  });

  it('parses as Prometheus text: every family typed and described, histograms whole, and Prometheus\'s own parser reads it', async () => {
    const r = await must(api.get('/metrics'));
    const m = parseExposition(r.text);
    checkHistograms(m);
    for (const s of m.samples) {
      const family = [s.name, s.name.replace(/_(bucket|sum|count)$/, '')].find((f) => m.types.has(f));
      expect(family, `${s.name} has a TYPE`).to.not.equal(undefined);
      expect(m.help.get(family!), `${family} has a HELP`).to.be.a('string').and.not.equal('');
    }
    for (const [name, type] of m.types) if (name.startsWith('hilt_') && type === 'counter') expect(name, 'counters end in _total').to.match(/_total$/);
    expect(await parseWithPrometheusClient(r.text)).to.equal(m.samples.length);
  });

  it('counts a dashboard action once, as the request that came (/ui/api/action), not the API call it runs in-process too', async () => {
    const login = await must(api.call('POST', '/ui/api/login', { as: null, body: { user: 'admin', password: 'admin-secret' } }));
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const before = await scrape();
    const r = await api.call('POST', '/ui/api/action', { as: null, body: { action: 'power_on', node: 'n1' }, headers: { cookie, 'x-csrf-token': login.body.csrf } });
    expect(r.status).to.equal(200);
    const after = await scrape();
    const moved = (labels: Record<string, string>) => value(after, 'hilt_http_requests_total', labels) - value(before, 'hilt_http_requests_total', labels);
    expect(moved({ route: '/ui/api/action', method: 'POST' })).to.equal(1);
    expect(moved({ route: '/node/:node/power_on' }), 'the bridged call').to.equal(0);
    expect(moved({}), 'every request: the action and the first scrape').to.equal(2);
  });

  it('needs an admin\'s basic authentication; is not part of the API (no /v0, not in the OpenAPI document)', async () => {
    const member = await makeUser(api, 'metrics-member', 'member-pw', ['p']);
    expect((await api.with(null).get('/metrics')).status).to.equal(401);
    expect((await api.with(member).get('/metrics')).status).to.equal(401);
    expect((await api.with({ user: 'admin', password: 'wrong' }).get('/metrics')).status).to.equal(401);
    expect((await api.get('/v0/metrics')).status).to.equal(404);
    const doc = (await must(api.get('/openapi.json'))).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).to.not.include('/metrics');
  });

  it('takes an admin\'s or an auditor\'s API token as well, read-only ones too (a scraper\'s credentials_file), and no member\'s', async () => {
    const auditor = await must(api.put('/auth/basic/user/metrics-auditor', { password: 'auditor-pw', role: 'auditor' }));
    expect(auditor.status).to.equal(200);
    const token = async (c: { user: string; password: string } | null, body: object) =>
      (await must((c ? api.with(c) : api).post('/auth/tokens', body))).body.token as string;
    const member = await makeUser(api, 'metrics-member-t', 'member-pw', ['p']);
    for (const [who, t] of [
      ['an admin\'s read-only token', await token(null, { read_only: true })],
      ['an auditor\'s token', await token({ user: 'metrics-auditor', password: 'auditor-pw' }, {})],
    ] as const) {
      const r = await api.with({ token: t }).get('/metrics');
      expect(r.status, who).to.equal(200);
      expect(parseExposition(r.text).samples.some((x) => x.name === 'hilt_info'), who).to.equal(true);
    }
    expect((await api.with({ token: await token(member, {}) }).get('/metrics')).status, 'a member\'s token').to.equal(401);
  });

  it('is open to a scraper without credentials with HILT_METRICS_OPEN', async () => {
    const open = await startTestServer({ metricsOpen: true, storage: 'memory' });
    try {
      const r = await open.api.with(null).get('/metrics');
      expect(r.status).to.equal(200);
      const m = parseExposition(r.text);
      expect(m.samples.find((s) => s.name === 'hilt_info')!.labels.storage).to.equal('memory');
      // The memory engine tells no size.
      expect(m.samples.some((s) => s.name === 'hilt_storage_size_bytes')).to.equal(false);
    } finally {
      await stopTestServer(open);
    }
  });
});
