/**
 * A real browser for the dashboard's tests: Debian's headless Chromium (the `chromium` package,
 * listed in .ci/apt-packages) driven with puppeteer-core. Every browser started here is closed
 * by the root after-hook; one that does not close in time is killed by its process group (puppeteer
 * starts Chromium as the leader of a group of its own: its pid is the group's id), so no Chromium
 * process outlives the run. Screenshots go to the test output folder (HILT_TEST_OUTPUT, default
 * test-output/ at the repository's root).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { Browser, Page } from 'puppeteer-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function chromiumPath(): string {
  const found = [process.env.HILT_CHROMIUM, ...CANDIDATES].find((p): p is string => !!p && existsSync(p));
  if (!found) throw new Error('the dashboard tests need Chromium: apt-get install -y chromium (listed in .ci/apt-packages), or set HILT_CHROMIUM');
  return found;
}

/** dist/test/helpers → the repository's root. */
export const OUTPUT = process.env.HILT_TEST_OUTPUT ?? join(__dirname, '..', '..', '..', 'test-output');

const open: { browser: Browser; pid: number | undefined }[] = [];

export async function launchBrowser(): Promise<Browser> {
  const browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in CI: Chromium's sandbox needs an unprivileged user. Small /dev/shm in containers.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--lang=en-US'],
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
    protocolTimeout: 60_000,
  });
  open.push({ browser, pid: browser.process()?.pid });
  return browser;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function closeBrowser(browser: Browser): Promise<void> {
  const i = open.findIndex((o) => o.browser === browser);
  const pid = i >= 0 ? open[i].pid : browser.process()?.pid;
  if (i >= 0) open.splice(i, 1);
  await Promise.race([browser.close().catch(() => undefined), sleep(10_000)]);
  if (pid !== undefined && alive(pid)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

after(async function () {
  this.timeout(60_000);
  for (const { browser } of [...open]) await closeBrowser(browser);
});

/** Saves a screenshot of the page as OUTPUT/ui/<name>.png; gives its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = join(OUTPUT, 'ui');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`) as `${string}.png`;
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * Click what `selector` finds, found and clicked in one step in the page: the live views redraw
 * as events arrive, which detaches an element handle taken before the click (page.click).
 */
export async function clickNow(page: Page, selector: string, wait: { timeout: number }): Promise<void> {
  await page.waitForFunction((sel: string) => {
    const el = document.querySelector<HTMLElement>(sel);
    el?.click();
    return !!el;
  }, wait, selector);
}
