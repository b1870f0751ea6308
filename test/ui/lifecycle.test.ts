/// <reference lib="dom" />
/**
 * The tenant lifecycle in the dashboard, in a real browser (issue 20 item 6): the inventory shows
 * each lease's time left; the Lifecycle page (admins) shows the nodes that need attention and the
 * maintenance pool, with the notices' failed POSTs.
 */
import { expect } from 'chai';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode } from '../helpers/server';
import { closeBrowser, launchBrowser, screenshot } from '../helpers/browser';
import { until } from '../helpers/wait';

const WAIT = { timeout: 15_000 };

const cells = (page: Page, table: string, col: string) =>
  page.$$eval(`[data-table="${table}"] tbody td[data-col="${col}"]`, (tds) => tds.map((td) => td.textContent ?? ''));

describe('the dashboard: leases, the maintenance pool, nodes that need attention', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let api: Client;
  let browser: Browser;
  let refusing: Server;

  before(async () => {
    // A maintenance service that refuses every notice.
    refusing = createServer((_req, res) => res.writeHead(503).end());
    await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
    const first = await startTestServer();
    await must(first.api.put('/project/maint'));
    await stopTestServer(first, false);
    ts = await startTestServer({ maintenanceProject: 'maint', maintenanceUrl: `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/` }, {}, first.dataDir);
    api = ts.api;
    await must(api.put('/project/p'));
    for (const n of ['leased', 'cleaned']) {
      await makeNode(api, n);
      await must(api.post('/project/p/connect_node', { node: n }));
    }
    await must(api.put('/node/leased/lease', { expires_at: new Date(Date.now() + 3 * 86_400_000 - 60_000).toISOString() }));
    await must(api.post('/project/p/detach_node', { node: 'cleaned' }));
    await until('a refused notice', () => (ts.world.rm.maintenanceNotices.get('cleaned')?.attempts ?? 0) >= 1);
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
    refusing.closeAllConnections();
    await new Promise((r) => refusing.close(r));
  });

  it('shows a lease\'s time left in the inventory, and the pool and its failing notice on the Lifecycle page', async () => {
    const page = await (await browser.createBrowserContext()).newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(`${ts.url}/ui/`);
    await page.waitForSelector('#login-user', { visible: true, ...WAIT });
    await page.type('#login-user', 'admin');
    await page.type('#login-password', 'admin-secret');
    await page.click('#login-submit');
    await page.waitForSelector('[data-table="nodes"] tbody td[data-col="lease"]', WAIT);
    const names = await cells(page, 'nodes', 'name');
    const leases = await cells(page, 'nodes', 'lease');
    expect(leases[names.indexOf('leased')]).to.match(/^2 d 23 h$/);
    expect(leases[names.indexOf('cleaned')]).to.equal('');
    expect(await page.$$eval('#nav a', (a) => a.map((x) => x.textContent))).to.include('Lifecycle');
    await page.evaluate(() => { location.hash = '#/lifecycle'; });
    await page.waitForSelector('[data-table="maintenance"] tbody td[data-col="attempts"]', WAIT);
    expect(await cells(page, 'maintenance', 'node')).to.deep.equal(['cleaned']);
    expect(await cells(page, 'maintenance', 'from')).to.deep.equal(['p']);
    expect(await cells(page, 'maintenance', 'notice')).to.deep.equal(['pending']);
    expect((await cells(page, 'maintenance', 'error'))[0]).to.match(/answered 503/);
    await page.waitForSelector('[data-table="attention"] tbody td[data-col="problem"]', WAIT);
    expect(await cells(page, 'attention', 'node')).to.deep.equal(['cleaned']);
    expect(await cells(page, 'attention', 'problem')).to.deep.equal(['maintenance_notice']);
    await screenshot(page, 'lifecycle');
    await page.browserContext().close();
  });
});
