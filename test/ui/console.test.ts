/// <reference lib="dom" />
/**
 * The dashboard's console view in a real browser (headless Chromium): a project member logs in,
 * opens a node's page, follows its "Serial console" link, and the terminal emulator (xterm.js,
 * served by hilt from its package) shows what the node's serial line printed (a real ipmi_sim
 * with SOL on a TCP serial line this test serves); what is typed there reaches the serial line.
 * Nothing is loaded from another origin; a page without the session gets no stream. The stream
 * never starts a recording: the page's "Start recording" does; and a page reached from another
 * site (one on localhost, the service being on 127.0.0.1) connects only after a click.
 */
import { expect } from 'chai';
import { createServer, request, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, obm, IPMI_OBM, ADMIN, basic } from '../helpers/server';
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
    // Nodes with the mock OBM's console (it prints a banner), recorded by nobody yet.
    for (const n of ['m1', 'm2', 'm3', 'm4']) {
      await must(api.put(`/node/${n}`, { obm: obm(`bmc-${n}`) }));
      await must(api.post('/project/p/connect_node', { node: n }));
    }
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

  /** A new browser context (its own cookies) with pat (or `user`) logged in to the dashboard. */
  async function loggedIn(user = 'pat', password = 'pat-pw'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.createBrowserContext();
    const p = await context.newPage();
    await p.goto(`${ts.url}/ui/`);
    await p.waitForSelector('#login-user', { visible: true, ...WAIT });
    await p.type('#login-user', user);
    await p.type('#login-password', password);
    await p.click('#login-submit');
    await p.waitForSelector('#nav a', { visible: true, ...WAIT });
    return { context, page: p };
  }
  const statusOf = (p: Page) => p.$eval('#status', (e) => e.textContent ?? '');
  /** The page's status once it has decided what to do (connected, refused, or asking). */
  async function settled(p: Page): Promise<string> {
    await p.waitForFunction(() => !['', 'Connecting…'].includes(document.getElementById('status')?.textContent ?? ''), WAIT);
    return statusOf(p);
  }
  const recording = (n: string) => ts.app.hilt.world.rm.nodes.get(n)!.console;

  it('starts no recording by connecting: a console not recorded says so, and "Start recording" starts it', async () => {
    const { context, page: p } = await loggedIn();
    await p.goto(`${ts.url}/ui/console.html#m1`);
    const status = await settled(p);
    expect(recording('m1'), `recorded by the page's connection (${status})`).to.equal(undefined);
    expect(status).to.include('the console is not recorded');
    await p.waitForSelector('#start-recording', { visible: true, ...WAIT });
    await p.click('#start-recording');
    await p.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent ?? '').includes('mock serial console of bmc-m1'), WAIT);
    expect(await statusOf(p)).to.include('Connected to the console of m1');
    expect(recording('m1')?.by).to.equal('pat');
    await context.close();
  });

  it('works for a node named "..", which the browser would drop from a path: its page, its console, "Start recording"', async () => {
    // Registered with the path as is (a URL parser would make /node/%2E%2E the root).
    const raw = (method: string, path: string, body: unknown) => new Promise<number>((resolve, reject) => {
      const u = new URL(ts.url);
      const req = request({ hostname: u.hostname, port: u.port, path, method, headers: { authorization: basic(ADMIN), 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
    expect(await raw('PUT', '/node/%2E%2E', { obm: obm('bmc-dots') })).to.equal(200);
    expect(await raw('POST', '/project/p/connect_node', { node: '..' })).to.equal(200);
    const { context, page: p } = await loggedIn();
    await p.goto(`${ts.url}/ui/#/node/..`);
    await p.waitForSelector('#node-console', { visible: true, ...WAIT });
    await Promise.all([p.waitForNavigation(WAIT), p.click('#node-console')]);
    expect(await settled(p)).to.include('the console is not recorded');
    // Offered: the page read the node (its project is pat's).
    await p.waitForSelector('#start-recording', { visible: true, ...WAIT });
    await p.click('#start-recording');
    await p.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent ?? '').includes('mock serial console of bmc-dots'), WAIT);
    expect(recording('..')?.by).to.equal('pat');
    await context.close();
  });

  it('offers no "Start recording" to whom may not start it: a reader of the node\'s project (a member of another), an auditor', async () => {
    await must(api.put('/project/q'));
    await makeUser(api, 'rea', 'rea-pw', ['q']);
    await must(api.post('/auth/basic/user/rea/add_project', { project: 'p', role: 'reader' }));
    await must(api.put('/auth/basic/user/aud', { password: 'aud-pw', role: 'auditor' }));
    for (const [user, password] of [['rea', 'rea-pw'], ['aud', 'aud-pw']]) {
      const { context, page: p } = await loggedIn(user, password);
      await p.goto(`${ts.url}/ui/console.html#m4`);
      const status = await settled(p);
      expect(status, user).to.include('the console is not recorded');
      expect(await p.$eval('#start-recording', (b) => (b as HTMLElement).hidden), `${user}: no Start recording`).to.equal(true);
      expect(status, user).to.include('Only a member of the node\'s project, or an admin, may start its recording');
      await context.close();
    }
    expect(recording('m4')).to.equal(undefined);
  });

  describe('reached from another site', () => {
    let other: Server;
    let otherUrl: string;
    before(async () => {
      // Another site's page (localhost is another site than 127.0.0.1) that sends the browser
      // to the console view, and keeps its own address out of the referrer.
      other = createServer((req, res) => {
        const node = new URL(req.url ?? '/', 'http://localhost').searchParams.get('node') ?? '';
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<!doctype html><meta name="referrer" content="no-referrer"><p>cat pictures</p><script>location.href = ${JSON.stringify(`${ts.url}/ui/console.html#${node}`)};</script>`);
      });
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
      otherUrl = `http://localhost:${(other.address() as AddressInfo).port}`;
      expect(ts.url).to.match(/^http:\/\/127\.0\.0\.1:/);
    });
    after(() => new Promise<void>((r) => other.close(() => r())));

    /** A logged-in member's browser, sent by the other site to the console view of `node`. */
    async function sentTo(node: string): Promise<{ context: BrowserContext; page: Page }> {
      const { context } = await loggedIn();
      const p = await context.newPage();
      await p.goto(`${otherUrl}/?node=${node}`);
      await p.waitForFunction(() => location.pathname === '/ui/console.html', WAIT);
      return { context, page: p };
    }

    it('neither connects nor starts a recording before the user clicks', async () => {
      const { context, page: p } = await sentTo('m2');
      const status = await settled(p);
      expect(recording('m2'), `recorded because another site sent the member there (${status})`).to.equal(undefined);
      expect(status).to.include('opened from another site');
      await p.waitForSelector('#connect', { visible: true, ...WAIT });
      // Connecting after the click does not start it either: that takes its own click.
      await p.click('#connect');
      await p.waitForSelector('#start-recording', { visible: true, ...WAIT });
      expect(recording('m2')).to.equal(undefined);
      await context.close();
    });

    it('connects to a recorded console only after the click on "Connect"', async () => {
      await must(api.with({ user: 'pat', password: 'pat-pw' }).call('PUT', '/node/m3/console'));
      const viewers = ts.consoles.viewerCount();
      const { context, page: p } = await sentTo('m3');
      const status = await settled(p);
      expect(ts.consoles.viewerCount(), `a viewer before the click (${status})`).to.equal(viewers);
      expect(status).to.include('opened from another site');
      await p.waitForSelector('#connect', { visible: true, ...WAIT });
      await p.click('#connect');
      await p.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent ?? '').includes('mock serial console of bmc-m3'), WAIT);
      expect(await statusOf(p)).to.include('Connected to the console of m3');
      expect(ts.consoles.viewerCount()).to.equal(viewers + 1);
      await context.close();
    });
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
