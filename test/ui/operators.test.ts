/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The dashboard for the people who run and use the machines (issue 26), in headless Chromium:
 * the four defects; failures first; the actions, as an admin, as a member of the node's project
 * and as a member of another project (absent, and refused when forged); the charts; state in the
 * URL and the back button; breadcrumbs and the project's members; rows as cards on a phone;
 * focus and the live region. Screenshots of every view at desktop and phone widths go to
 * test-output/ui/ for a person to look at.
 */
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, finished } from '../helpers/server';
import { clickNow, closeBrowser, launchBrowser, screenshot } from '../helpers/browser';

const WAIT = { timeout: 15_000 };
const DESKTOP = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844, isMobile: true, hasTouch: true };

async function freshPage(browser: Browser, viewport: typeof DESKTOP | typeof PHONE = DESKTOP): Promise<Page> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport(viewport);
  return page;
}

async function login(page: Page, url: string, user: string, password: string, hash = ''): Promise<void> {
  await page.goto(`${url}/ui/${hash}`);
  await page.waitForSelector('#login-user', { visible: true, ...WAIT });
  await page.type('#login-user', user);
  await page.type('#login-password', password);
  await page.click('#login-submit');
  await page.waitForSelector('#nav a', { visible: true, ...WAIT });
}

const column = (page: Page, table: string, col: string) =>
  page.$$eval(`[data-table="${table}"] tbody td[data-col="${col}"]`, (tds) => tds.map((td) => td.textContent ?? ''));
const status = (page: Page, re: RegExp) => page.waitForFunction((s) => new RegExp(s).test(document.getElementById('status')?.textContent ?? ''), WAIT, re.source);
const go = async (page: Page, hash: string, ready: string) => {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector(ready, WAIT);
};
/** Texts of the buttons in an element. */
const buttons = (page: Page, sel: string) => page.$$eval(`${sel} button`, (bs) => bs.map((b) => b.textContent ?? ''));

describe('the dashboard for operators and tenants', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  let browser: Browser;
  const pat = { user: 'pat', password: 'pat-pw-26' };
  const quinn = { user: 'quinn', password: 'quinn-pw-26' };
  before(async () => {
    ts = await startTestServer({ mockSwitchFailPorts: ['s2/gi1/0/9'] });
    api = ts.api;
    for (const p of ['p', 'q']) await must(api.put(`/project/${p}`));
    for (const [sw, node, port, project] of [['s1', 'n1', 'gi1/0/1', 'p'], ['s2', 'n2', 'gi1/0/9', 'p'], ['s1', 'o1', 'gi1/0/2', 'q']]) {
      if (!ts.world.rm.switches.has(sw)) await must(api.put(`/switch/${sw}`, { ...mockSwitch, hostname: '127.0.0.1' }));
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/${sw}/port/${port}`));
      await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post(`/project/${project}/connect_node`, { node }));
    }
    await must(api.put('/switch/s1/port/gi1/0/3'));
    for (const f of ['f1', 'f2']) await makeNode(api, f);
    await must(api.put('/network/net-p', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/net-q', { owner: 'q', access: 'q', net_id: '' }));
    const failed = (await must(api.post('/node/n2/nic/eth0/connect_network', { network: 'net-p' }), 202)).body.status_id;
    expect((await finished(api, failed)).status).to.equal('ERROR');
    await makeUser(api, pat.user, pat.password, ['p']);
    await makeUser(api, quinn.user, quinn.password, ['q']);
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
  });

  describe('the defects', () => {
    it('no Log out on the login page nor after logging out; "You are logged out." is a note, not an error', async () => {
      const page = await freshPage(browser);
      await page.goto(`${ts.url}/ui/`);
      await page.waitForSelector('#login-user', { visible: true, ...WAIT });
      expect(await page.$eval('#logout', (b) => (b as HTMLElement).offsetParent === null), 'hidden on the login page').to.equal(true);
      await login(page, ts.url, 'admin', 'admin-secret');
      expect(await page.$eval('#logout', (b) => (b as HTMLElement).offsetParent !== null), 'shown once logged in').to.equal(true);
      await page.click('#logout');
      await page.waitForSelector('#login-user', { visible: true, ...WAIT });
      expect(await page.$eval('#logout', (b) => (b as HTMLElement).offsetParent === null), 'hidden after logging out').to.equal(true);
      expect(await page.$eval('#login-note', (p) => [p.textContent, p.className, p.getAttribute('role')])).to.deep.equal(['You are logged out.', 'notice', 'status']);
      expect(await page.$eval('#login-error', (p) => p.textContent)).to.equal('');
      expect(await page.$eval('#login-note', (p) => getComputedStyle(p).color)).to.not.equal(await page.$eval('#login-error', (p) => getComputedStyle(p).color));
      await screenshot(page, '26-logged-out');
      await page.browserContext().close();
    });

    it('a member\'s free nodes: counted, found by the free filter, and opened (with Reserve), not "does not exist"', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, pat.user, pat.password);
      await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
      const free = await page.$$eval('.cards .card', (cs) => cs.find((c) => c.querySelector('dt')!.textContent === 'Free')?.querySelector('dd')?.textContent);
      expect(free).to.equal('2');
      await page.select('#nodes-state', 'free');
      await page.waitForFunction(() => document.querySelectorAll('[data-table="nodes"] tbody td[data-col="name"]').length === 2, WAIT);
      expect(await column(page, 'nodes', 'name')).to.deep.equal(['f1', 'f2']);
      await clickNow(page, '[data-table="nodes"] tbody tr:first-child td[data-col="name"] a', WAIT);
      await page.waitForSelector('#node-detail .action-bar', WAIT);
      expect(await page.$eval('#node-detail', (d) => d.textContent)).to.not.match(/does not exist/);
      expect(await buttons(page, '#node-detail .action-bar')).to.deep.equal(['Reserve']);
      await page.browserContext().close();
    });

    it('a switch\'s ports filter says so with a chip that removes it, and does not follow to another view', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, 'admin', 'admin-secret', '#/switches');
      await page.waitForSelector('[data-table="switches"] tbody button.linkish', WAIT);
      await clickNow(page, '[data-table="switches"] tbody button[aria-label="Show the ports of s2"]', WAIT);
      await page.waitForSelector('[data-table="ports"] .chip', WAIT);
      expect(await page.$eval('[data-table="ports"] .chip', (c) => c.textContent)).to.equal('Switch: s2 ✕');
      expect(await page.evaluate(() => location.hash)).to.equal('#/switches?ports.f.switch=s2');
      expect([...new Set(await column(page, 'ports', 'switch'))]).to.deep.equal(['s2']);
      await page.click('#nav a[href="#/inventory"]');
      await page.waitForSelector('[data-table="nodes"] tbody td', WAIT);
      await page.click('#nav a[href="#/switches"]');
      await page.waitForFunction(() => document.querySelectorAll('[data-table="ports"] tbody td[data-col="switch"]').length === 4, WAIT);
      expect(await page.$('[data-table="ports"] .chip'), 'no filter after leaving the view').to.equal(null);
      // The chip removes its filter.
      await clickNow(page, '[data-table="switches"] tbody button[aria-label="Show the ports of s1"]', WAIT);
      await page.waitForSelector('[data-table="ports"] .chip', WAIT);
      await clickNow(page, '[data-table="ports"] .chip', WAIT);
      await page.waitForFunction(() => document.querySelectorAll('[data-table="ports"] tbody td[data-col="switch"]').length === 4 && !document.querySelector('[data-table="ports"] .chip'), WAIT);
      await page.browserContext().close();
    });

    it('the audit with a Name but no Kind: the refusal where the rows were, not the earlier rows', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, 'admin', 'admin-secret', '#/audit');
      await page.waitForFunction(() => document.querySelectorAll('#view tbody tr').length > 3, WAIT);
      await page.type('#audit-name', 'n1');
      await page.$eval('#audit-name', (i) => i.dispatchEvent(new Event('change')));
      await page.waitForSelector('#view tbody td[role="alert"]', WAIT);
      expect(await page.$$eval('#view tbody tr', (trs) => trs.length)).to.equal(1);
      expect(await page.$eval('#view tbody td[role="alert"]', (td) => td.textContent)).to.match(/^Could not read the audit log: .*kind/);
      // With a kind, the rows of that object; a port's name as the two names commands take.
      await page.select('#audit-kind', 'node');
      await page.waitForFunction(() => [...document.querySelectorAll('#view tbody tr')].some((tr) => /NodeRegistered/.test(tr.textContent ?? '')), WAIT);
      expect(await page.evaluate(() => location.hash), 'the filter is in the URL').to.equal('#/audit?audit.kind=node&audit.name=n1');
      await page.select('#audit-kind', 'port');
      await page.$eval('#audit-name', (i) => { (i as HTMLInputElement).value = ''; i.dispatchEvent(new Event('change')); });
      await page.waitForFunction(() => [...document.querySelectorAll('#view tbody td')].some((td) => td.textContent === 's1 gi1/0/1'), WAIT);
      await screenshot(page, '26-audit-refused');
      await page.browserContext().close();
    });
  });

  it('failures first: a node\'s failed operation and power on its row, the red Failures card opening the failures, a switch\'s failing ports', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.waitForSelector('[data-table="nodes"] tbody td[data-col="last_status"]', WAIT);
    const n2 = await page.$$eval('[data-table="nodes"] tbody tr', (trs) => {
      const tr = trs.find((t) => t.querySelector('td')?.textContent === 'n2')!;
      return { last: tr.querySelector('td[data-col="last_status"]')!.textContent, error: tr.querySelector('td[data-col="last_status"] .error')?.textContent, power: tr.querySelector('td[data-col="power"]')!.textContent };
    });
    expect(n2.last).to.match(/^ERROR connect eth0 net-p/);
    expect(n2.error).to.match(/refused the change \(failure injected\)/);
    expect(n2.power).to.equal('unknown');
    const card = await page.$$eval('.cards .card', (cs) => cs.filter((c) => c.querySelector('dt')!.textContent === 'Failures (24 h)').map((c) => [c.className, c.querySelector('a')?.getAttribute('href')])[0]);
    expect(card).to.deep.equal(['card bad', '#/operations?operations.f.status=ERROR']);
    await clickNow(page, '.card.bad a', WAIT);
    await page.waitForFunction(() => document.querySelectorAll('[data-table="operations"] tbody td[data-col="status"]').length > 0, WAIT);
    expect([...new Set(await column(page, 'operations', 'status'))]).to.deep.equal(['ERROR']);
    expect(await page.$eval('#operations-status', (s) => (s as HTMLSelectElement).value)).to.equal('ERROR');
    await go(page, '#/switches', '[data-table="switches"] tbody td[data-col="failing"]');
    const s2 = await page.$$eval('[data-table="switches"] tbody tr', (trs) => trs.map((t) => [t.querySelector('td')!.textContent, t.querySelector('td[data-col="failing"]')!.textContent]));
    expect(s2).to.deep.include(['s2', '1']);
    await go(page, '#/node/n2', '#node-detail table');
    expect(await page.$eval('#node-detail table tbody td[data-label="Last operation"]', (td) => td.textContent)).to.match(/^ERROR connect net-p.*failure injected/);
    await go(page, '#/switches', '[data-table="switches"] a.badge.bad');
    await clickNow(page, '[data-table="switches"] a.badge.bad', WAIT);
    await page.waitForFunction(() => {
      const cells = [...document.querySelectorAll('[data-table="ports"] tbody td[data-col="status"]')].map((t) => t.textContent ?? '');
      return cells.length === 1 && /^failinglast operation failed: .*gi1\/0\/9.*failure injected/.test(cells[0]);
    }, WAIT);
    expect(await page.evaluate(() => location.hash)).to.equal('#/switches?ports.f.switch=s2&ports.f.status=failing');
    await page.browserContext().close();
  });

  describe('actions', () => {
    it('a member of the node\'s project: power, connect with the picker (followed to its end), detach, release; no admin actions', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, pat.user, pat.password, '#/node/n1');
      await page.waitForSelector('#node-detail .action-bar', WAIT);
      expect(await buttons(page, '#node-detail .action-bar')).to.deep.equal(['Release', 'Power on', 'Power off', 'Power cycle', 'Boot device…']);
      expect(await buttons(page, '#node-detail table')).to.deep.equal(['Connect…']);
      // Power on, confirmed.
      await clickNow(page, '#node-detail .action-bar button:nth-of-type(2)', WAIT);
      await page.waitForSelector('#confirm[open]', WAIT);
      await page.click('#confirm-ok');
      await status(page, /^Power on: done\.$/);
      expect(ts.mockObm.state(ts.world.rm.nodes.get('n1')!.obm.fields.host as string).power).to.equal('on');
      await page.waitForFunction(() => /on/.test([...document.querySelectorAll('#node-detail .card')].find((c) => c.querySelector('dt')?.textContent === 'Power')?.querySelector('dd')?.textContent ?? ''), WAIT);
      // Boot device through its form.
      await clickNow(page, '#node-detail .action-bar button:nth-of-type(5)', WAIT);
      await page.waitForSelector('#form[open]', WAIT);
      await page.select('#form-bootdev', 'disk');
      await page.click('#form-ok');
      await status(page, /^Boot device: done\.$/);
      expect(ts.mockObm.state(ts.world.rm.nodes.get('n1')!.obm.fields.host as string).bootdev).to.equal('disk');
      // Connect: the project's networks only; the native channel chosen.
      await clickNow(page, '#node-detail table button', WAIT);
      await page.waitForSelector('#form[open]', WAIT);
      expect(await page.$$eval('#form-network option', (os) => os.map((o) => (o as HTMLOptionElement).value))).to.deep.equal(['net-p']);
      expect(await page.$eval('#form-channel', (s) => (s as HTMLSelectElement).value)).to.equal('native');
      await screenshot(page, '26-connect-picker');
      await page.click('#form-ok');
      await status(page, /^Connect eth0 to net-p: (queued|done)/);
      await status(page, /^Connect eth0 to net-p: done\.$/);
      expect(ts.world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({ 'vlan/native': 'net-p' });
      // Detach, confirmed.
      // Found and clicked in one step in the page: the live stream may redraw the table in between.
      await page.waitForFunction(() => {
        const b = [...document.querySelectorAll<HTMLElement>('#node-detail table button')].find((x) => x.textContent === 'Detach net-p');
        b?.click();
        return !!b;
      }, WAIT);
      await page.waitForSelector('#confirm[open]', WAIT);
      await page.click('#confirm-ok');
      await status(page, /^Detach: done\.$/);
      expect(ts.world.rm.nic('n1', 'eth0')!.networks).to.deep.equal({});
      await page.browserContext().close();
    });

    it('a member reserves a free node from the inventory, then releases it', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, pat.user, pat.password);
      await page.waitForSelector('[data-table="nodes"] button[aria-label="Reserve node f2"]', WAIT);
      // Clicked in the page, found and clicked at once: the live stream may redraw the row in between.
      await page.$eval('[data-table="nodes"] button[aria-label="Reserve node f2"]', (b) => (b as HTMLElement).click());
      await page.waitForSelector('#form[open]', WAIT);
      expect(await page.$$eval('#form-project option', (os) => os.map((o) => o.textContent))).to.deep.equal(['p']);
      await page.click('#form-ok');
      await status(page, /^Reserve: done\.$/);
      expect(ts.world.rm.nodes.get('f2')!.project).to.equal('p');
      await page.waitForSelector('[data-table="nodes"] button[aria-label="Release node f2"]', WAIT);
      // Clicked in the page, found and clicked at once: the live stream may redraw the row in between.
      await page.$eval('[data-table="nodes"] button[aria-label="Release node f2"]', (b) => (b as HTMLElement).click());
      await page.waitForSelector('#confirm[open]', WAIT);
      await page.click('#confirm-ok');
      await status(page, /^Release: done\.$/);
      expect(ts.world.rm.nodes.get('f2')!.project).to.equal(null);
      await page.browserContext().close();
    });

    it('a member of another project: no action on the node (not even shown), none but Reserve on a free one, and a forged one refused', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, quinn.user, quinn.password);
      await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
      expect(await column(page, 'nodes', 'name')).to.deep.equal(['f1', 'f2', 'o1']);
      expect(await page.$$eval('[data-table="nodes"] tbody td.actions', (tds) => tds.map((t) => t.textContent))).to.deep.equal(['Reserve', 'Reserve', 'Release']);
      expect(await page.$('.action-bar[aria-label="Registration"]'), 'no registration forms').to.equal(null);
      await go(page, '#/node/n1', '#node-detail p.error');
      expect(await page.$('#node-detail .action-bar')).to.equal(null);
      await go(page, '#/node/f1', '#node-detail .action-bar');
      expect(await buttons(page, '#node-detail .action-bar'), 'a free node\'s power is the admin\'s').to.deep.equal(['Reserve']);
      const forged = await page.evaluate(async () => {
        const me = await (await fetch('api/me')).json();
        const r = await fetch('api/action', { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf }, body: JSON.stringify({ action: 'power_off', node: 'n1' }) });
        return r.status;
      });
      expect(forged, 'the API refuses what the page does not offer').to.equal(401);
      await page.browserContext().close();
    });

    it('an auditor (reads as an admin, changes nothing): no action, no form, on any row or page', async () => {
      await must(api.put('/auth/basic/user/aud', { password: 'aud-pw-26', role: 'auditor' }));
      const page = await freshPage(browser);
      await login(page, ts.url, 'aud', 'aud-pw-26');
      await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
      expect((await column(page, 'nodes', 'name')).length, 'every node, as an admin reads them').to.equal(ts.world.rm.nodes.size);
      expect(await page.$$eval('[data-table="nodes"] tbody td.actions button', (bs) => bs.length)).to.equal(0);
      expect(await page.$('.action-bar')).to.equal(null);
      await go(page, '#/node/n1', '#node-detail table');
      expect(await page.$$eval('#node-detail button', (bs) => bs.map((b) => b.textContent))).to.deep.equal([]);
      await go(page, '#/switches', '[data-table="ports"] tbody td[data-col="port"]');
      expect(await page.$$eval('[data-table="ports"] tbody button', (bs) => bs.length)).to.equal(0);
      expect(await page.$$eval('[data-table="switches"] tbody button', (bs) => bs.map((b) => b.textContent)).then((b) => b.includes('Repair'))).to.equal(false);
      await page.browserContext().close();
    });

    it('a reader of the node\'s project who is a member of another: reads its nodes, is offered no change on them', async () => {
      await makeUser(api, 'rhea', 'rhea-pw-26', ['q']);
      await must(api.post('/auth/basic/user/rhea/add_project', { project: 'p', role: 'reader' }));
      const page = await freshPage(browser);
      await login(page, ts.url, 'rhea', 'rhea-pw-26');
      await page.waitForSelector('[data-table="nodes"] tbody td[data-col="name"]', WAIT);
      expect(await column(page, 'nodes', 'name'), 'p\'s nodes, read').to.deep.equal(['f1', 'f2', 'n1', 'n2', 'o1']);
      expect(await page.$$eval('[data-table="nodes"] tbody td.actions', (tds) => tds.map((t) => t.textContent))).to.deep.equal(['Reserve', 'Reserve', '', '', 'Release']);
      await go(page, '#/node/n1', '#node-detail table');
      expect(await page.$('#node-detail .action-bar'), 'no power, no release').to.equal(null);
      expect(await page.$$eval('#node-detail button', (bs) => bs.map((b) => b.textContent)), 'no connect, no detach').to.deep.equal([]);
      await go(page, '#/node/f1', '#node-detail .action-bar');
      await clickNow(page, '#node-detail .action-bar button', WAIT);
      await page.waitForSelector('#form[open]', WAIT);
      expect(await page.$$eval('#form-project option', (os) => os.map((o) => o.textContent)), 'reserved into its own project only').to.deep.equal(['q']);
      await page.browserContext().close();
    });

    it('an admin: registration forms, a port\'s revert and re-apply, a switch\'s repair', async () => {
      const page = await freshPage(browser);
      await login(page, ts.url, 'admin', 'admin-secret');
      await page.waitForSelector('.action-bar[aria-label="Registration"] button', WAIT);
      await clickNow(page, '.action-bar[aria-label="Registration"] button', WAIT);
      await page.waitForSelector('#form[open]', WAIT);
      await page.type('#form-node', 'formed');
      await page.select('#form-type', 'mock');
      await page.type('#form-host', '127.0.0.1');
      await page.type('#form-user', 'bmc');
      await page.type('#form-password', 'formed-bmc-pw');
      await screenshot(page, '26-register-node');
      await page.click('#form-ok');
      await status(page, /^Register node formed: done\.$/);
      expect(ts.world.rm.nodes.get('formed')!.obm.fields).to.deep.include({ host: '127.0.0.1', user: 'bmc' });
      await go(page, '#/switches', '[data-table="ports"] tbody td.actions');
      expect(await buttons(page, '[data-table="ports"] tbody tr:first-child td.actions')).to.deep.equal(['Revert', 'Re-apply']);
      const before = ts.world.rm.nic('n1', 'eth0')!.lastSeq;
      await clickNow(page, '[data-table="ports"] tbody tr:first-child td.actions button:last-child', WAIT);
      await page.waitForSelector('#confirm[open]', WAIT);
      expect(await page.$eval('#confirm-text', (p) => p.textContent)).to.match(/^Re-apply the configuration the service holds to port gi1\/0\/1 of switch s1/);
      await page.click('#confirm-ok');
      await status(page, /^Re-apply: queued/);
      expect(ts.world.rm.nic('n1', 'eth0')!.lastSeq).to.equal(before + 1);
      // Found and clicked in one step in the page: the live view redraws the table as the
      // re-apply's events arrive, which detaches any handle taken before the click.
      await page.waitForFunction(() => {
        const b = [...document.querySelectorAll<HTMLButtonElement>('[data-table="switches"] tbody tr:first-child button')].find((x) => x.textContent === 'Repair');
        b?.click();
        return !!b;
      }, WAIT);
      await page.waitForSelector('#confirm[open]', WAIT);
      await page.click('#confirm-ok');
      await status(page, /^Repair: done\.$/);
      await page.waitForFunction(() => /repaired|in_sync/.test(document.querySelector('[data-table="switches"] tbody tr td[data-col="audit"]')?.textContent ?? ''), WAIT);
      await page.browserContext().close();
    });
  });

  it('pictures: nodes per project, the VLAN pool, operations per switch and the health over time, drawn by uPlot from the service', async () => {
    const page = await freshPage(browser);
    const fromElsewhere: string[] = [];
    page.on('request', (r) => { if (!r.url().startsWith(ts.url) && !r.url().startsWith('data:')) fromElsewhere.push(r.url()); });
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.waitForSelector('#chart-nodes canvas', WAIT);
    expect(await page.$eval('#chart-nodes figcaption', (f) => f.textContent)).to.match(/^\d+ free; \d+ in p, \d+ in q\.$/);
    expect(await page.$eval('#chart-vlans h2', (t) => t.textContent)).to.equal('VLAN pool: 2 of 1000 in use');
    await go(page, '#/operations', '#chart-failures canvas');
    expect(await page.$eval('#chart-failures figcaption', (f) => f.textContent)).to.match(/^In the last hour: /);
    await go(page, '#/health', '#chart-requests canvas');
    await page.waitForSelector('#chart-memory canvas', WAIT);
    await page.select('#health-charts-period', 'day');
    await page.waitForFunction(() => location.hash === '#/health?period=day', WAIT);
    expect(fromElsewhere, 'nothing from elsewhere (no CDN)').to.deep.equal([]);
    expect((await api.get('/ui/vendor/uplot.js')).status).to.equal(200);
    await page.browserContext().close();
  });

  it('state in the URL: a shared link opens the same filter, the back button undoes one; breadcrumbs; the project\'s members', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'admin', 'admin-secret', '#/inventory?nodes.f.state=free&nodes.sort=name&nodes.dir=desc');
    const free = [...ts.world.rm.freeNodes].sort().reverse();
    await page.waitForFunction((n) => document.querySelectorAll('[data-table="nodes"] tbody td[data-col="name"]').length === n, WAIT, free.length);
    expect(await column(page, 'nodes', 'name'), 'the shared link\'s filter and sort').to.deep.equal(free);
    expect(await page.$eval('#nodes-state', (s) => (s as HTMLSelectElement).value)).to.equal('free');
    await page.select('#nodes-state', 'in use');
    await page.waitForFunction(() => location.hash.includes('nodes.f.state=in+use'), WAIT);
    await page.goBack();
    await page.waitForFunction((n) => document.querySelectorAll('[data-table="nodes"] tbody td[data-col="name"]').length === n, WAIT, free.length);
    expect(await page.$eval('#nodes-state', (s) => (s as HTMLSelectElement).value)).to.equal('free');
    await go(page, '#/node/n1', '#node-detail .action-bar');
    expect(await page.$$eval('nav.crumbs li', (ls) => ls.map((l) => l.textContent))).to.deep.equal(['Projects', 'Project p', 'Node n1']);
    await clickNow(page, 'nav.crumbs a[href="#/project/p"]', WAIT);
    await page.waitForSelector('[data-table="project-members"] tbody td[data-col="user"]', WAIT);
    expect(await column(page, 'project-members', 'user')).to.deep.equal(['pat']);
    expect(await page.$$eval('nav.crumbs li', (ls) => ls.map((l) => l.textContent))).to.deep.equal(['Projects', 'Project p']);
    await page.browserContext().close();
  });

  it('accessibility: focus on the new content after login and a view change, a live status region, actions by keyboard', async () => {
    const page = await freshPage(browser);
    await login(page, ts.url, 'admin', 'admin-secret');
    await page.waitForFunction(() => document.activeElement?.id === 'view-title', WAIT);
    await page.click('#nav a[href="#/networks"]');
    await page.waitForFunction(() => document.activeElement?.id === 'view-title' && document.activeElement.textContent === 'Networks', WAIT);
    expect(await page.$eval('#status', (s) => [s.getAttribute('role'), s.getAttribute('aria-live')])).to.deep.equal(['status', 'polite']);
    // Keyboard only: Tab to the node's Power on, Enter, then Escape cancels.
    await go(page, '#/node/n1', '#node-detail .action-bar');
    await page.focus('#view-title');
    let found = false;
    for (let i = 0; i < 60 && !found; i++) {
      await page.keyboard.press('Tab');
      found = await page.evaluate(() => document.activeElement?.textContent === 'Power off');
    }
    expect(found, 'Power off is reachable with Tab').to.equal(true);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#confirm[open]', WAIT);
    await page.keyboard.press('Escape');
    await status(page, /^Cancelled\.$/);
    await page.browserContext().close();
  });

  describe('small screens', () => {
    it('rows become cards below 600 px, badges do not wrap; every view at desktop and phone widths saved for a person to look at', async () => {
      const views = ['inventory', 'projects', 'project/p', 'networks', 'switches', 'operations', 'headnodes', 'lifecycle', 'health', 'audit', 'node/n2'];
      for (const [name, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
        const page = await freshPage(browser, viewport);
        await login(page, ts.url, 'admin', 'admin-secret');
        for (const v of views) {
          await go(page, `#/${v}`, '#view h1');
          await page.waitForFunction(() => !document.querySelector('#view tbody') || document.querySelectorAll('#view tbody td').length > 0, WAIT);
          await screenshot(page, `26-${v.replace('/', '-')}-${name}`);
        }
        await go(page, '#/inventory', '[data-table="nodes"] tbody td[data-col="name"]');
        const layout = await page.$eval('[data-table="nodes"]', (t) => ({
          head: getComputedStyle(t.querySelector('thead')!).position,
          cell: getComputedStyle(t.querySelector('tbody td')!).display,
          label: getComputedStyle(t.querySelector('tbody td[data-col="power"]')!, '::before').content,
          wraps: [...t.querySelectorAll('.badge')].some((b) => b.getClientRects().length > 1),
        }));
        if (name === 'phone') expect(layout).to.deep.equal({ head: 'absolute', cell: 'block', label: '"Power: "', wraps: false });
        else expect(layout).to.deep.include({ head: 'static', cell: 'table-cell', wraps: false });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        if (name === 'phone') expect(overflow, 'no sideways scrolling of the page').to.be.at.most(0);
        await page.browserContext().close();
      }
      // As a member on a phone too.
      const page = await freshPage(browser, PHONE);
      await login(page, ts.url, pat.user, pat.password, '#/node/n1');
      await page.waitForSelector('#node-detail .action-bar', WAIT);
      await screenshot(page, '26-member-node-phone');
      await page.browserContext().close();
    });
  });
});
