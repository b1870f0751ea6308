/// <reference lib="dom" />
/**
 * The dashboard's console view in a real browser (headless Chromium): a project member logs in,
 * opens a node's page, follows its "Serial console" link, and the terminal emulator (xterm.js,
 * served by hilt from its package) shows what the node's serial line printed (a real ipmi_sim
 * with SOL on a TCP serial line this test serves); what is typed there reaches the serial line.
 * Nothing is loaded from another origin; a page without the session gets no stream.
 */
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, IPMI_OBM } from '../helpers/server';
import { closeBrowser, launchBrowser, screenshot } from '../helpers/browser';
import { startIpmiSim, stopAllIpmiSims, requireIpmiTools } from '../helpers/ipmisim';
import { startSerialLine, SerialLine } from '../helpers/serial-line';
import { until } from '../helpers/wait';

const WAIT = { timeout: 20_000 };

describe('the dashboard\'s console view in a browser', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let api: Client;
  let browser: Browser;
  let line: SerialLine;
  let page: Page;
  const requests: string[] = [];

  before(async () => {
    requireIpmiTools();
    ts = await startTestServer({ ipmiCipherSuite: '3' });
    api = ts.api;
    line = await startSerialLine();
    const sim = await startIpmiSim({ user: 'admin', password: 'ui-sol-pw', solPort: line.port });
    await until('the SOL serial line connected', () => line.connected(), 10_000);
    await must(api.put('/project/p'));
    await must(api.put('/node/web1', { obm: { type: IPMI_OBM, host: sim.host, user: 'admin', password: 'ui-sol-pw' } }));
    await must(api.post('/project/p/connect_node', { node: 'web1' }));
    await makeUser(api, 'pat', 'pat-pw', ['p']);
    await must(api.with({ user: 'pat', password: 'pat-pw' }).call('PUT', '/node/web1/console'));
    await until('the session', () => ts.consoles.active() === 1, 15_000);
    await line.write('GRUB loading.\r\nWelcome to the node console test\r\n');
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
    await stopAllIpmiSims();
    await line.close();
  });

  it('opens from the node\'s page and shows the node\'s output in the terminal', async () => {
    const context = await browser.createBrowserContext();
    page = await context.newPage();
    await page.setViewport({ width: 1200, height: 800 });
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${ts.url}/ui/`);
    await page.waitForSelector('#login-user', { visible: true, ...WAIT });
    await page.type('#login-user', 'pat');
    await page.type('#login-password', 'pat-pw');
    await page.click('#login-submit');
    await page.waitForSelector('#nav a', { visible: true, ...WAIT });
    await page.goto(`${ts.url}/ui/#/node/web1`);
    await page.waitForSelector('#node-console', { visible: true, ...WAIT });
    await Promise.all([page.waitForNavigation(WAIT), page.click('#node-console')]);
    await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent ?? '').includes('Welcome to the node console test'), WAIT);
    // Live output after the page opened.
    await line.write('login: ');
    await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent ?? '').includes('login:'), WAIT);
    expect(await page.$eval('#status', (e) => e.textContent)).to.include('Connected to the console of web1');
    // xterm's own styles apply (its <style> elements are allowed on this page only): rows are laid out.
    const rowHeight = await page.$eval('.xterm-rows > div', (e) => e.getBoundingClientRect().height);
    expect(rowHeight).to.be.greaterThan(5);
    await screenshot(page, 'console');
  });

  it('sends what is typed in the terminal to the node\'s serial line', async () => {
    await page.click('#terminal');
    await page.keyboard.type('root');
    await page.keyboard.press('Enter');
    await until('typed text on the serial line', () => line.received().includes('root\r'), 10_000);
  });

  it('loads everything from the service itself (xterm.js from its package, no CDN)', () => {
    const origin = new URL(ts.url).origin;
    const foreign = requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'));
    expect(foreign).to.deep.equal([]);
    expect(requests.some((u) => u.endsWith('/ui/xterm.js'))).to.equal(true);
  });

  it('gives no stream without the dashboard\'s session, or from another origin', async () => {
    const ws = (headers: Record<string, string>) => new Promise<number>((resolve) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const WebSocket = require('ws') as typeof import('ws');
      const s = new WebSocket(`${ts.url.replace(/^http/, 'ws')}/ui/api/node/web1/console/stream`, { headers });
      s.on('open', () => { s.close(); resolve(101); });
      s.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      s.on('error', () => resolve(-1));
    });
    const origin = new URL(ts.url).origin;
    expect(await ws({ origin })).to.equal(401);
    const cookies = await page.cookies();
    const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    expect(await ws({ cookie, origin: 'http://evil.example' })).to.equal(401);
    expect(await ws({ cookie })).to.equal(401);
    expect(await ws({ cookie, origin })).to.equal(101);
  });
});
