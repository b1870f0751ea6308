/// <reference lib="dom" />
/**
 * Names are any text (docs/api-conventions.md §1): a name made of HTML or script must show as
 * text in every view of the dashboard, never become an element or run (headless Chromium,
 * test/helpers/browser.ts). The page puts values in as text; the CSP would also refuse inline
 * script, so the test looks for elements the names would make, not only for script that ran.
 */
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { startTestServer, stopTestServer, TestServer, Client, must, mockSwitch, obm } from '../helpers/server';
import { closeBrowser, launchBrowser } from '../helpers/browser';

const WAIT = { timeout: 15_000 };

// Each would make an element with an id `inj-…` if it were parsed as HTML.
const PROJECT = '<img src=x id=inj-project onerror=window.__xss=1>';
const NODE = '"><img src=x id=inj-node onerror=window.__xss=1>';
const NIC = '<svg id=inj-nic onload=window.__xss=1>';
const NETWORK = "'><script id=inj-network>window.__xss=1</script>";
const SWITCH = '<iframe id=inj-switch src=javascript:window.__xss=1>';
// A switch driver takes only its own port names.
const PORT = 'gi1/0/1';
const LABEL = '<a id=inj-label href=javascript:window.__xss=1>m</a>';
const enc = encodeURIComponent;

describe('the dashboard shows names made of HTML as text', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let api: Client;
  let browser: Browser;
  let page: Page;
  const violations: string[] = [];

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put(`/project/${enc(PROJECT)}`));
    await must(api.put(`/switch/${enc(SWITCH)}`, mockSwitch));
    await must(api.put(`/node/${enc(NODE)}`, { obm: obm(), metadata: { [LABEL]: LABEL } }));
    await must(api.put(`/node/${enc(NODE)}/nic/${enc(NIC)}`, { macaddr: 'de:ad:be:ef:00:01' }));
    await must(api.put(`/switch/${enc(SWITCH)}/port/${enc(PORT)}`));
    await must(api.post(`/switch/${enc(SWITCH)}/port/${enc(PORT)}/connect_nic`, { node: NODE, nic: NIC }));
    await must(api.post(`/project/${enc(PROJECT)}/connect_node`, { node: NODE }));
    await must(api.put(`/network/${enc(NETWORK)}`, { owner: PROJECT, access: PROJECT, net_id: '' }));
    await must(api.post(`/node/${enc(NODE)}/nic/${enc(NIC)}/connect_network`, { network: NETWORK }), 202);
    browser = await launchBrowser();
    page = await (await browser.createBrowserContext()).newPage();
    await page.setViewport({ width: 1400, height: 900 });
    page.on('dialog', (d) => {
      violations.push(`a dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.evaluateOnNewDocument(() => {
      document.addEventListener('securitypolicyviolation', (e) => ((window as unknown as { __csp: string[] }).__csp ??= []).push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    await page.goto(`${ts.url}/ui/`);
    await page.waitForSelector('#login-user', { visible: true, ...WAIT });
    await page.type('#login-user', 'admin');
    await page.type('#login-password', 'admin-secret');
    await page.click('#login-submit');
    await page.waitForSelector('#nav a', { visible: true, ...WAIT });
  });
  after(async () => {
    if (browser) await closeBrowser(browser);
    await stopTestServer(ts);
  });

  /** Opens a view, waits for `shown` among its text, and checks that no name became markup. */
  async function view(hash: string, shown: string[]): Promise<void> {
    await page.evaluate((h) => { location.hash = h; }, hash);
    await page.waitForFunction((texts: string[]) => texts.every((t) => document.getElementById('view')!.textContent!.includes(t)), WAIT, shown);
    const found = await page.evaluate(() => ({
      injected: [...document.querySelectorAll('[id^="inj-"]')].map((e) => e.outerHTML),
      ran: (window as unknown as { __xss?: number }).__xss ?? null,
      csp: (window as unknown as { __csp?: string[] }).__csp ?? [],
    }));
    expect(found, hash).to.deep.equal({ injected: [], ran: null, csp: [] });
    expect(violations, hash).to.deep.equal([]);
  }

  it('in every view: inventory, projects, a project, a node, networks, switches and ports, operations', async () => {
    await view('#/inventory', [NODE, PROJECT]);
    await view('#/projects', [PROJECT, NETWORK]);
    await view(`#/project/${enc(PROJECT)}`, [`Project ${PROJECT}`, NODE]);
    await view(`#/node/${enc(NODE)}`, [`Node ${NODE}`, NIC, NETWORK, SWITCH, PORT, `${LABEL}=${LABEL}`]);
    await view('#/networks', [NETWORK, `${NODE}/${NIC}`]);
    await view('#/switches', [SWITCH, PORT]);
    await view('#/operations', [NODE, NIC, NETWORK, PORT]);
  });
});
