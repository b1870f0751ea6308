/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The dashboard says "logged out" only when the session has ended on the service: a person who
 * reads it may leave the browser, and a session still live there is anyone's who reloads.
 * The API answers a missing right with 401 (HIL's rule), which is not the end of the session;
 * a logout the service did not get leaves the session live.
 */
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, must, makeNode, makeUser } from '../helpers/server';
import { closeBrowser, launchBrowser } from '../helpers/browser';

const WAIT = { timeout: 15_000 };

async function login(browser: Browser, url: string, user: string, password: string): Promise<Page> {
  const page = await (await browser.createBrowserContext()).newPage();
  await page.goto(`${url}/ui/`);
  await page.waitForSelector('#login-user', { visible: true, ...WAIT });
  await page.type('#login-user', user);
  await page.type('#login-password', password);
  await page.click('#login-submit');
  await page.waitForSelector('#nav a', { visible: true, ...WAIT });
  return page;
}

/** Does the service still serve this page's session? */
const live = (page: Page) => page.evaluate(async () => (await fetch('api/me', { cache: 'no-store' })).status === 200);
const loginShown = (page: Page) => page.$eval('#login', (el) => !(el as HTMLElement).hidden);

describe('the dashboard\'s word on its session', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let browser: Browser;
  before(async () => {
    ts = await startTestServer({});
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/project/q'));
    await makeNode(ts.api, 'nq');
    await must(ts.api.post('/project/q/connect_node', { node: 'nq' }));
    await makeUser(ts.api, 'pat', 'pat-pw', ['p']);
    browser = await launchBrowser();
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
  });

  it('stays logged in when the API refuses an action with 401 (a missing right)', async () => {
    const page = await login(browser, ts.url, 'pat', 'pat-pw');
    // An action on another project's node (as a membership removed meanwhile would make it): the API's 401.
    // (A string: TypeScript would compile a dynamic import() to require.)
    const status = await page.evaluate(`import('./app.js').then((m) => m.api('action', { method: 'POST', body: { action: 'power_on', node: 'nq' } })).then(() => 0, (err) => err.status)`);
    expect(status).to.equal(401);
    expect(await live(page), 'the session is live').to.equal(true);
    // Give the page the time it would take to log itself out.
    await new Promise((r) => setTimeout(r, 500));
    expect(await loginShown(page), 'the login form is not shown').to.equal(false);
    expect(await page.$eval('#login-note', (el) => el.textContent)).to.equal('');
    await page.browserContext().close();
  });

  it('does not say "logged out" when the logout did not reach the service: the session is live', async () => {
    const page = await login(browser, ts.url, 'pat', 'pat-pw');
    await page.setRequestInterception(true);
    page.on('request', (req) => (req.url().endsWith('/ui/api/logout') ? req.abort() : req.continue()));
    await page.click('#logout');
    await page.waitForFunction(() => /log out/i.test(document.getElementById('status')?.textContent ?? ''), WAIT);
    expect(await live(page)).to.equal(true);
    expect(await loginShown(page)).to.equal(false);
    // Once it reaches the service, it ends the session and says so.
    page.removeAllListeners('request');
    await page.setRequestInterception(false);
    await page.click('#logout');
    await page.waitForFunction(() => document.getElementById('login-note')?.textContent === 'You are logged out.', WAIT);
    expect(await live(page)).to.equal(false);
    await page.browserContext().close();
  });

  it('logs out on screen when the session has ended on the service (user deleted)', async () => {
    await makeUser(ts.api, 'tom', 'tom-pw', ['p']);
    const page = await login(browser, ts.url, 'tom', 'tom-pw');
    await must(ts.api.call('DELETE', '/auth/basic/user/tom'));
    await page.evaluate(`import('./app.js').then((m) => m.api('summary')).catch(() => undefined)`);
    await page.waitForFunction(() => /session has ended/.test(document.getElementById('login-note')?.textContent ?? ''), WAIT);
    expect(await loginShown(page)).to.equal(true);
    await page.browserContext().close();
  });
});
