/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The dashboard in a real browser (headless Chromium, test/helpers/browser.ts): an admin logs in,
 * sees the inventory, follows a network operation from PENDING to DONE without reloading, reads
 * a failure's reason, visits every page (a screenshot of each goes to test-output/ui/), and
 * re-applies a port, force-detaches a network, runs a drift audit and clears a port's doubt on a
 * switch gone for good, each only once confirmed (a cancel calls nothing; a member is not offered
 * the last); a project member sees only its project; a wrong password fails;
 * without the session cookie nothing is served. With 10,000 nodes it stays fast.
 */
import { expect } from 'chai';
import { addSecret } from '../helpers/secrets';
import type { Browser, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, finished, deadSwitch } from '../helpers/server';
import { clickNow, closeBrowser, launchBrowser, screenshot } from '../helpers/browser';
import { parseExposition, value } from '../helpers/prometheus';
import { sleep, until } from '../helpers/wait';

const WAIT = { timeout: 15_000 };

/** The texts of a column of the table `name` (by data-col). */
function column(page: Page, table: string, col: string): Promise<string[]> {
  return page.$$eval(`[data-table="${table}"] tbody td[data-col="${col}"]`, (tds) => tds.map((td) => td.textContent ?? ''));
}

/** Waits until the rows of a table hold a cell whose text matches, in the row of `key` (first column). */
async function waitForCell(page: Page, table: string, key: string, col: string, pattern: RegExp): Promise<void> {
  await page.waitForFunction((t, k, c, re) => [...document.querySelectorAll(`[data-table="${t}"] tbody tr`)].some((tr) =>
    tr.querySelector('td')?.textContent === k && new RegExp(re).test(tr.querySelector(`td[data-col="${c}"]`)?.textContent ?? '')), WAIT, table, key, col, pattern.source);
}

/** A page in a context of its own: no cookie of another test. */
async function freshPage(browser: Browser): Promise<Page> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  return page;
}

async function login(page: Page, url: string, user: string, password: string): Promise<void> {
  await page.goto(`${url}/ui/`);
  await page.waitForSelector('#login-user', { visible: true, ...WAIT });
  await page.type('#login-user', user);
  await page.type('#login-password', password);
  await page.click('#login-submit');
  await page.waitForSelector('#nav a', { visible: true, ...WAIT });
}

describe('the dashboard in a browser', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let api: Client;
  let browser: Browser;
  before(async () => {
    // Each switch operation takes 2.5 s: long enough to be seen PENDING between two polls.
    ts = await startTestServer({ headnodeDriver: 'mock', mockSwitchDelayMs: 2500, mockSwitchFailPorts: ['s2/gi1/0/9'] });
    api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/project/other'));
    for (const [sw, node, port, project] of [['s1', 'n1', 'gi1/0/1', 'p'], ['s2', 'n2', 'gi1/0/9', 'p'], ['s1', 'o1', 'gi1/0/2', 'other']]) {
      if (!ts.world.rm.switches.has(sw)) await must(api.put(`/switch/${sw}`, mockSwitch));
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/${sw}/port/${port}`));
      await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post(`/project/${project}/connect_node`, { node }));
    }
    for (let i = 0; i < 12; i++) await makeNode(api, `spare${String(i).padStart(2, '0')}`);
    await must(api.put('/network/net-p', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/net-other', { owner: 'other', access: 'other', net_id: '' }));
    await must(api.put('/headnode/hn-p', { project: 'p', base_img: 'base-headnode' }));
    await must(api.put('/headnode/hn-p/hnic/hn0'));
    await must(api.post('/headnode/hn-p/start'));
    await makeUser(api, 'pat', 'pat-pw', ['p']);
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
  });

  it('refuses a wrong password, and then logs an admin in to the inventory', async () => {
    const page = await freshPage(browser);
    await page.goto(`${ts.url}/ui/`);
    await page.waitForSelector('#login-user', { visible: true, ...WAIT });
    await screenshot(page, 'login');
    await page.type('#login-user', 'admin');
    await page.type('#login-password', 'wrong-password');
    await page.click('#login-submit');
    await page.waitForFunction(() => document.getElementById('login-error')?.textContent === 'Wrong user name or password.', WAIT);
    expect(await page.cookies()).to.deep.equal([]);
    expect(await page.$eval('#nav', (n) => (n as HTMLElement).hidden)).to.equal(true);
    await screenshot(page, 'login-failed');
    await page.$eval('#login-password', (i) => { (i as HTMLInputElement).value = ''; });
    await page.type('#login-password', 'admin-secret');
    await page.click('#login-submit');
    await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
    // The session cookie as the browser keeps it.
    const [cookie] = await page.cookies();
    expect(cookie).to.deep.include({ name: 'hilt_ui', path: '/ui', httpOnly: true, sameSite: 'Strict', session: false });
    expect(cookie.expires * 1000).to.be.within(Date.now() + 7.9 * 3600_000, Date.now() + 8.1 * 3600_000);
    expect(await page.evaluate(() => document.cookie), 'HttpOnly: scripts cannot read it').to.equal('');
    const cards = await page.$$eval('.cards .card', (cs) => cs.map((c) => `${c.querySelector('dt')!.textContent}=${c.querySelector('dd')!.textContent}`));
    expect(cards).to.include.members(['Nodes=15', 'Free=12', 'In use=3', 'Projects=2']);
    expect(await column(page, 'nodes', 'name')).to.deep.equal(['n1', 'n2', 'o1', ...Array.from({ length: 12 }, (_, i) => `spare${String(i).padStart(2, '0')}`)]);
    expect(await page.$eval('[data-table="nodes"] .pager span', (s) => s.textContent)).to.equal('1–15 of 15');
    await screenshot(page, 'inventory');
    // Filter and sort, on the service.
    await page.select('#nodes-state', 'in use');
    await page.waitForFunction(() => document.querySelectorAll('[data-table="nodes"] tbody tr').length === 3, WAIT);
    await clickNow(page, '[data-table="nodes"] th button.sort', WAIT);
    await page.waitForFunction(() => document.querySelector('[data-table="nodes"] tbody td')?.textContent === 'o1', WAIT);
    expect(await page.$eval('[data-table="nodes"] th', (th) => th.getAttribute('aria-sort'))).to.equal('descending');
    await page.type('#nodes-q', 'n2');
    await page.waitForFunction(() => document.querySelectorAll('[data-table="nodes"] tbody tr').length === 1, WAIT);
    await page.browserContext().close();
  });

  it('follows a network operation from PENDING to DONE, and a failure with its reason, without reloading', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.click('#nav a[href="#/operations"]');
    await page.waitForSelector('[data-table="operations"]', WAIT);
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    await page.evaluate(() => { (window as unknown as { stayed: boolean }).stayed = true; });
    await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'net-p' }), 202);
    await must(api.post('/node/n2/nic/eth0/connect_network', { network: 'net-p' }), 202);
    await waitForCell(page, 'operations', 'PENDING', 'node', /^n1$/);
    await screenshot(page, 'operations-pending');
    await waitForCell(page, 'operations', 'DONE', 'node', /^n1$/);
    await waitForCell(page, 'operations', 'ERROR', 'error', /port gi1\/0\/9 refused the change \(failure injected\)/);
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).to.equal(true);
    expect(navigations).to.equal(0);
    await screenshot(page, 'operations');
    await page.browserContext().close();
  });

  it('shows every page: projects, networks with VLAN ids, switches with wiring, headnodes with VNC ports, health, audit, a node', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'admin', 'admin-secret');
    const visit = async (hash: string, ready: string) => {
      await page.evaluate((h) => { location.hash = h; }, hash);
      await page.waitForSelector(ready, WAIT);
    };
    await visit('#/projects', '[data-table="projects"] tbody td[data-col="nodes"]');
    expect(await column(page, 'projects', 'name')).to.deep.equal(['other', 'p']);
    await screenshot(page, 'projects');
    await visit('#/project/p', '[data-table="project-nodes"] tbody td[data-col="name"]');
    expect(await column(page, 'project-nodes', 'name')).to.deep.equal(['n1', 'n2']);
    await screenshot(page, 'project');
    await visit('#/networks', '[data-table="networks"] tbody td[data-col="vlan"]');
    const vlan = String(ts.world.rm.networks.get('net-p')!.vlan);
    await waitForCell(page, 'networks', 'net-p', 'vlan', new RegExp(`^${vlan}$`));
    await waitForCell(page, 'networks', 'net-p', 'attached', /n1\/eth0 \(native\)/);
    await screenshot(page, 'networks');
    await visit('#/switches', '[data-table="ports"] tbody td[data-col="port"]');
    await waitForCell(page, 'ports', 's1', 'node', /^n1$/);
    // A switch's name narrows the ports to it.
    await clickNow(page, '[data-table="switches"] tbody tr:nth-child(2) button.linkish', WAIT);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-table="ports"] tbody td[data-col="switch"]')].every((td) => td.textContent === 's2'), WAIT);
    await screenshot(page, 'switches');
    await visit('#/headnodes', '[data-table="headnodes"] tbody td[data-col="vncport"]');
    await waitForCell(page, 'headnodes', 'hn-p', 'status', /^running$/);
    await waitForCell(page, 'headnodes', 'hn-p', 'vncport', /^\d+$/);
    await screenshot(page, 'headnodes');
    await visit('#/health', '#health table');
    expect(await page.$$eval('#health dt', (d) => d.map((x) => x.textContent))).to.include.members(['Requests/s (10 s)', 'Switch calls queued']);
    await screenshot(page, 'health');
    await visit('#/audit', '#view tbody td');
    await page.waitForFunction(() => [...document.querySelectorAll('#view tbody tr')].some((tr) => /NetworkActionFailed/.test(tr.textContent ?? '')), WAIT);
    await page.type('#audit-user', 'pat');
    await page.$eval('#audit-user', (i) => i.dispatchEvent(new Event('change')));
    await page.waitForFunction(() => /Nothing to show/.test(document.querySelector('#view tbody')?.textContent ?? ''), WAIT);
    await screenshot(page, 'audit');
    await visit('#/node/n1', '#node-detail table');
    await screenshot(page, 'node');
    await page.browserContext().close();
  });

  it('re-applies a port after asking for confirmation, and does nothing when cancelled', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.evaluate(() => { location.hash = '#/node/n1'; });
    const button = '#node-detail button[data-action="reapply"]';
    await page.waitForSelector(button, WAIT);
    const before = ts.world.rm.nic('n1', 'eth0')!.lastSeq;
    await clickNow(page, button, WAIT);
    await page.waitForSelector('#confirm[open]', WAIT);
    expect(await page.$eval('#confirm-text', (p) => p.textContent)).to.match(/^Re-apply the configuration the service holds to the switch port of nic eth0 of node n1/);
    await screenshot(page, 'confirm');
    await page.click('#confirm-cancel');
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Cancelled.', WAIT);
    expect(ts.world.rm.nic('n1', 'eth0')!.lastSeq).to.equal(before);
    await clickNow(page, button, WAIT);
    await page.waitForSelector('#confirm[open]', WAIT);
    await page.click('#confirm-ok');
    await page.waitForFunction(() => /^Re-apply: queued/.test(document.getElementById('status')?.textContent ?? ''), WAIT);
    expect(ts.world.rm.nic('n1', 'eth0')!.lastSeq).to.equal(before + 1);
    // Followed live in the node's operations.
    await page.waitForFunction(() => [...document.querySelectorAll('#node-detail tbody tr')].some((tr) => /DONE.*reapply/.test(tr.textContent ?? '')), WAIT);
    await page.browserContext().close();
  });

  it('shows a change made through the API without a reload (from the event stream, no polling), and says when it reconnects', async () => {
    const page = await freshPage(browser);
    const summaries: number[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/ui/api/summary') summaries.push(Date.now());
    });
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.waitForFunction(() => /^Live/.test(document.getElementById('live')?.textContent ?? ''), WAIT);
    await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
    // Nothing changes: the page asks nothing (it would poll otherwise).
    await new Promise((r) => setTimeout(r, 2500));
    const quiet = summaries.length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(summaries.length, 'no polling while nothing changes').to.equal(quiet);
    // A change through the API appears, without a reload.
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));
    await makeNode(api, 'live-node');
    await waitForCell(page, 'nodes', 'live-node', 'name', /^live-node$/);
    expect(navigations).to.deep.equal([]);
    // The stream drops (the service ends it): the page says it reconnects, then goes on live.
    for (const st of (ts.app.hilt.events as unknown as { streams: Set<{ drop(r: string): void }> }).streams) st.drop('closing');
    await page.waitForFunction(() => /Reconnecting/.test(document.getElementById('live')?.textContent ?? ''), WAIT);
    await screenshot(page, 'reconnecting');
    await page.waitForFunction(() => /^Live/.test(document.getElementById('live')?.textContent ?? ''), WAIT);
    await makeNode(api, 'live-node-2');
    await waitForCell(page, 'nodes', 'live-node-2', 'name', /^live-node-2$/);
    await page.browserContext().close();
    await must(api.del('/node/live-node'));
    await must(api.del('/node/live-node-2'));
  });

  /** The bodies of the dashboard's action calls (POST api/action) the page makes from now on. */
  function actionCalls(page: Page): unknown[] {
    const calls: unknown[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && new URL(r.url()).pathname === '/ui/api/action') calls.push(JSON.parse(r.postData() ?? 'null'));
    });
    return calls;
  }

  /** Opens the confirmation with `button` and answers it; resolves once it has closed. */
  async function confirmWith(page: Page, button: string, answer: 'cancel' | 'ok', question: RegExp): Promise<void> {
    await clickNow(page, button, WAIT);
    await page.waitForSelector('#confirm[open]', WAIT);
    expect(await page.$eval('#confirm-text', (p) => p.textContent)).to.match(question);
    await page.click(answer === 'ok' ? '#confirm-ok' : '#confirm-cancel');
    await page.waitForSelector('#confirm:not([open])', WAIT);
  }

  it('force-detaches a network after asking for confirmation, and does nothing when cancelled', async () => {
    const page = await freshPage(browser);
    const calls = actionCalls(page);
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.evaluate(() => { location.hash = '#/node/n1'; });
    const button = '#node-detail button[data-action="force_detach"]';
    await page.waitForSelector(button, WAIT);
    expect(await page.$eval(button, (b) => b.textContent)).to.equal('Force-detach net-p');
    const question = /^Forget that nic eth0 of node n1 is attached to net-p, in the service's state only\?/;
    const before = ts.world.rm.nic('n1', 'eth0')!;
    expect(Object.values(before.networks)).to.deep.equal(['net-p']);

    await confirmWith(page, button, 'cancel', question);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Cancelled.', WAIT);
    expect(calls).to.deep.equal([]);
    expect(ts.world.rm.nic('n1', 'eth0')!.lastSeq).to.equal(before.lastSeq);

    await confirmWith(page, button, 'ok', question);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Force-detach: done.', WAIT);
    expect(calls).to.deep.equal([{ action: 'force_detach', node: 'n1', nic: 'eth0', network: 'net-p' }]);
    expect(ts.world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
    // The page shows it: no network left to detach.
    await page.waitForSelector(button, { hidden: true, ...WAIT });
    await page.browserContext().close();
  });

  it('runs a switch\'s drift audit after asking for confirmation, and does nothing when cancelled', async () => {
    // The force-detach above put n1's port in doubt; its set-back removed net-p. Then the port drifts.
    await until('the port is set back', () => !ts.world.rm.port('s1', 'gi1/0/1')!.doubt, 30_000);
    const session = await ts.mockSwitch.open({ name: 's1', type: 'mock', fields: {} }, new AbortController().signal);
    await session.addTagged('gi1/0/1', 3999);
    const page = await freshPage(browser);
    const calls = actionCalls(page);
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.evaluate(() => { location.hash = '#/switches'; });
    await page.waitForSelector('[data-table="switches"] tbody td[data-col="name"]', WAIT);
    // The s1 row's button.
    const row = (await column(page, 'switches', 'name')).indexOf('s1') + 1;
    expect(row).to.be.greaterThan(0);
    const button = `[data-table="switches"] tbody tr:nth-child(${row}) button:not(.linkish)`; // the first: Drift audit
    expect(await page.$eval(button, (b) => b.textContent)).to.equal('Drift audit');
    const question = /^Run a drift audit of switch s1\?/;
    // Dashboard actions count as the request that came (docs/operations.md), not the API call each runs.
    const audits = async () => value(parseExposition(await ts.metrics.text()), 'hilt_http_requests_total', { route: '/ui/api/action' });
    const before = await audits();

    await confirmWith(page, button, 'cancel', question);
    // A call would leave at once: give it the time to show.
    await new Promise((r) => setTimeout(r, 500));
    expect(calls).to.deep.equal([]);
    expect(await audits()).to.equal(before);
    expect(await page.$('#result[open]')).to.equal(null);

    await confirmWith(page, button, 'ok', question);
    await page.waitForSelector('#result[open]', WAIT);
    expect(calls).to.deep.equal([{ action: 'drift', switch: 's1' }]);
    expect(await audits()).to.equal(before + 1);
    expect(await page.$eval('#result-title', (t) => t.textContent)).to.equal('Drift audit of s1');
    const report = JSON.parse(await page.$eval('#result-text', (t) => t.textContent ?? '')) as { switch: string; ports: { port: string; status: string }[] };
    expect(report.switch).to.equal('s1');
    expect(report.ports.map((p) => p.port).sort()).to.deep.equal(['gi1/0/1', 'gi1/0/2']);
    // n1's port carries a VLAN the service never set.
    expect(report.ports.find((p) => p.port === 'gi1/0/1')!.status).to.equal('drifted');
    await screenshot(page, 'drift-audit');
    await page.browserContext().close();
  });

  it('logs in with an API token, and lets a user create a token (its secret shown once) and revoke it after asking', async () => {
    const made = (await must(api.with({ user: 'pat', password: 'pat-pw' }).post('/auth/tokens', { description: 'browser' }))).body as { token: string };
    addSecret(made.token);
    const page = await freshPage(browser);
    await page.goto(`${ts.url}/ui/`);
    await page.waitForSelector('#login-token', { visible: true, ...WAIT });
    await page.type('#login-token', made.token);
    await page.click('#login-submit');
    await page.waitForSelector('#nav a', { visible: true, ...WAIT });
    expect(await page.$eval('#user', (e) => e.textContent)).to.equal('pat');
    await page.evaluate(() => { location.hash = '#/tokens'; });
    await page.waitForSelector('#token-form', WAIT);
    // A token cannot make tokens: the page says so.
    await page.type('#token-description', 'made in the browser');
    await page.click('#token-form button[type="submit"]');
    await page.waitForFunction(() => /Could not create the token: a token cannot create tokens/.test(document.getElementById('status')?.textContent ?? ''), WAIT);
    await page.browserContext().close();

    const pw = await freshPage(browser);
    await login(pw, ts.url, 'pat', 'pat-pw');
    await pw.evaluate(() => { location.hash = '#/tokens'; });
    await pw.waitForSelector('#token-form', WAIT);
    await pw.type('#token-description', 'made in the browser');
    await pw.click('#token-form button[type="submit"]');
    await pw.waitForSelector('#result[open]', WAIT);
    const secret = (await pw.$eval('#result-text', (e) => e.textContent)) ?? '';
    addSecret(secret);
    expect(secret).to.match(/^hilt_[0-9a-f]{16}_/);
    expect((await api.with({ token: secret }).get('/project/p/nodes')).status).to.equal(200);
    await pw.keyboard.press('Escape');
    await pw.waitForFunction(() => [...document.querySelectorAll('#tokens tbody tr')].some((tr) => /made in the browser/.test(tr.textContent ?? '')), WAIT);
    expect(await pw.$eval('#tokens', (e) => e.textContent)).to.not.include(secret);
    const id = secret.slice(5, 21);
    const row = await pw.$$eval('#tokens tbody tr', (trs, i) => trs.findIndex((tr) => tr.textContent?.includes(i as string)), id);
    await confirmWith(pw, `#tokens tbody tr:nth-child(${row + 1}) button.danger`, 'ok', /^Revoke token [0-9a-f]{16} \(made in the browser\)/);
    await pw.waitForFunction(() => /^Revoke: done/.test(document.getElementById('status')?.textContent ?? ''), WAIT);
    expect((await api.with({ token: secret }).get('/project/p/nodes')).status).to.equal(401);
    await pw.browserContext().close();
  });

  it('shows a project member only its project, and nothing once logged out or without the cookie', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'pat', 'pat-pw');
    await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
    expect(await page.$$eval('#nav a', (as) => as.map((a) => a.textContent))).to.deep.equal(['Inventory', 'Projects', 'Networks', 'Operations', 'Headnodes', 'Tokens']);
    // Its project's nodes, and the free ones it may reserve (issue 26), not another project's.
    expect(await column(page, 'nodes', 'name')).to.deep.equal(['n1', 'n2', ...Array.from({ length: 12 }, (_, i) => `spare${String(i).padStart(2, '0')}`)]);
    expect(await page.$$eval('[data-table="nodes"] th', (th) => th.map((t) => t.textContent))).to.not.include('BMC driver');
    await screenshot(page, 'member-inventory');
    await page.evaluate(() => { location.hash = '#/networks'; });
    await page.waitForSelector('[data-table="networks"] tbody td[data-col="name"]', WAIT);
    expect(await column(page, 'networks', 'name')).to.deep.equal(['net-p']);
    await page.evaluate(() => { location.hash = '#/operations'; });
    await page.waitForSelector('[data-table="operations"] tbody td[data-col="node"]', WAIT);
    expect([...new Set(await column(page, 'operations', 'node'))].sort()).to.deep.equal(['n1', 'n2']);
    // Wiring is for operators only: no switch or port column (the rows have none).
    const heads = await page.$$eval('[data-table="operations"] th', (th) => th.map((t) => t.textContent));
    expect(heads).to.include('Network');
    expect(heads).to.not.include('Switch');
    expect(heads).to.not.include('Port');
    // An admin page asked for by hand: the inventory instead; the service refuses its data.
    await page.evaluate(() => { location.hash = '#/audit'; });
    await page.waitForSelector('[data-table="nodes"]', WAIT);
    expect(await page.evaluate(async () => (await fetch('api/table/switches')).status)).to.equal(401);
    expect(await page.evaluate(async () => (await fetch('api/node/o1')).status)).to.equal(404);
    await screenshot(page, 'member-operations');
    // Without the cookie: refused.
    expect(await page.evaluate(async () => (await fetch('api/summary', { credentials: 'omit' })).status)).to.equal(401);
    await page.click('#logout');
    await page.waitForSelector('#login-user', { visible: true, ...WAIT });
    expect(await page.evaluate(async () => (await fetch('api/summary')).status)).to.equal(401);
    await page.browserContext().close();
  });

  it('clears a port\'s doubt on a switch gone for good from the Lifecycle page (admins, once confirmed); a member is not offered it', async () => {
    // As test/src/routes/repair.test.ts makes one: a force-detach whose set-back cannot reach the dead switch.
    await must(api.put('/switch/sd', mockSwitch));
    await must(api.put('/switch/sd/port/gi1/0/5'));
    await makeNode(api, 'dn', ['eth0']);
    await must(api.post('/switch/sd/port/gi1/0/5/connect_nic', { node: 'dn', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'dn' }));
    await finished(api, (await must(api.post('/node/dn/nic/eth0/connect_network', { network: 'net-p' }), 202)).body.status_id);
    const dead = deadSwitch(ts, 'sd');
    try {
      await must(api.post('/admin/node/dn/nic/eth0/force_detach', { network: 'net-p' }));
      await until('a login to sd', () => dead.logins() >= 1, 10_000);
      await sleep(100);
      const inDoubt = () => ts.world.rm.port('sd', 'gi1/0/5')!.doubt;
      expect(inDoubt()!.vlans).to.have.length(1);

      // A member of the node's project: no Lifecycle page, no button; the bridge refuses the call.
      const member = await freshPage(browser);
      const memberCalls = actionCalls(member);
      await login(member, ts.url, 'pat', 'pat-pw');
      expect(await member.$$eval('#nav a', (as) => as.map((a) => a.textContent))).to.not.include('Lifecycle');
      await member.evaluate(() => { location.hash = '#/lifecycle'; });
      await member.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
      expect(await member.$('[data-table="attention"]')).to.equal(null);
      await member.evaluate(() => { location.hash = '#/node/dn'; });
      await member.waitForSelector('#node-detail', WAIT);
      expect(await member.$('button[data-action="clear_doubt"]')).to.equal(null);
      expect(memberCalls).to.deep.equal([]);
      expect(await member.evaluate(async () => (await fetch('api/action', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ action: 'clear_doubt', switch: 'sd', port: 'gi1/0/5' }) })).status)).to.equal(401);
      expect(inDoubt()).to.not.equal(undefined);
      await member.browserContext().close();

      // The admin: the attention list's port_in_doubt row has the button; cancel calls nothing, confirm clears.
      const page = await freshPage(browser);
      const calls = actionCalls(page);
      await login(page, ts.url, 'admin', 'admin-secret');
      await page.evaluate(() => { location.hash = '#/lifecycle'; });
      await page.waitForSelector('[data-table="attention"] tbody td[data-col="problem"]', WAIT);
      const problems = await column(page, 'attention', 'problem');
      const row = problems.indexOf('port_in_doubt') + 1;
      expect(row).to.be.greaterThan(0);
      // Only the port in doubt's row offers it.
      expect(await page.$$eval('[data-table="attention"] button[data-action="clear_doubt"]', (bs) => bs.length)).to.equal(1);
      const button = `[data-table="attention"] tbody tr:nth-child(${row}) button[data-action="clear_doubt"]`;
      expect(await page.$eval(button, (b) => b.textContent)).to.equal('Clear doubt');
      const question = /^Clear the doubt of port gi1\/0\/5 of switch sd by hand\? It asserts that the switch no longer carries the VLANs/;

      await confirmWith(page, button, 'cancel', question);
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Cancelled.', WAIT);
      expect(calls).to.deep.equal([]);
      expect(inDoubt()).to.not.equal(undefined);

      await confirmWith(page, button, 'ok', question);
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Clear doubt: done.', WAIT);
      expect(calls).to.deep.equal([{ action: 'clear_doubt', switch: 'sd', port: 'gi1/0/5' }]);
      expect(inDoubt()).to.equal(undefined);
      // Recorded as the admin's, through the API's own call.
      const audit = (await must(api.get(`/admin/audit?kind=port&limit=1`))).body.entries[0];
      expect(audit).to.deep.include({ by: 'admin', call: 'admin_clear_doubt' });
      // The page shows it: the row and its button are gone.
      await page.waitForSelector(button.replace(/tbody tr:nth-child\(\d+\) /, ''), { hidden: true, ...WAIT });
      await screenshot(page, 'lifecycle-doubt-cleared');
      await page.browserContext().close();
    } finally {
      dead.revive();
    }
  });
});

describe('the dashboard with 10,000 nodes', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let browser: Browser;
  const N = 10_000;
  before(async () => {
    ts = await startTestServer({ storage: 'memory' });
    await must(ts.api.put('/project/big'));
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (let i = next++; i < N; i = next++) await must(ts.api.put(`/node/node-${String(i).padStart(5, '0')}`, { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: `bmc-${i}`, user: 'u', password: 'p' } }));
    }));
    for (let i = 0; i < 100; i++) await must(ts.api.post('/project/big/connect_node', { node: `node-${String(i).padStart(5, '0')}` }));
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
  });

  it('serves a page of nodes quickly, renders one page of rows, and filters and pages on the service', async () => {
    const page = await freshPage(browser);
    const t0 = Date.now();
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.waitForFunction((n) => document.querySelector('[data-table="nodes"] .pager span')?.textContent === `1–50 of ${n}`, WAIT, N);
    const shown = Date.now() - t0;
    expect(await page.$$eval('[data-table="nodes"] tbody tr', (trs) => trs.length)).to.equal(50);
    expect(shown, 'from the login page to the first rows').to.be.below(10_000);
    await screenshot(page, 'inventory-10000');
    // The service's side: a sorted, filtered page of 10,000 rows.
    const timings: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = Date.now();
      const r = await page.evaluate(async () => (await fetch('api/table/nodes?sort=name&dir=desc&q=node-0&limit=50')).json()) as { total: number; rows: { name: string }[] };
      timings.push(Date.now() - t);
      expect(r.total).to.equal(N);
      expect(r.rows[0].name).to.equal('node-09999');
    }
    expect(Math.min(...timings), 'a page of 10,000 nodes, sorted and filtered').to.be.below(500);
    await page.type('#nodes-q', 'node-09876');
    await page.waitForFunction(() => document.querySelector('[data-table="nodes"] .pager span')?.textContent === '1–1 of 1', WAIT);
    await page.$eval('#nodes-q', (i) => { (i as HTMLInputElement).value = ''; i.dispatchEvent(new Event('input')); });
    await page.waitForFunction((n) => document.querySelector('[data-table="nodes"] .pager span')?.textContent === `1–50 of ${n}`, WAIT, N);
    await clickNow(page, '[data-table="nodes"] .pager button:last-child', WAIT);
    await page.waitForFunction((n) => document.querySelector('[data-table="nodes"] .pager span')?.textContent === `51–100 of ${n}`, WAIT, N);
    await page.browserContext().close();
  });
});
