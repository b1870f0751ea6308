/**
 * Test servers: the real service (LMDB in a temp folder, real HTTP on 127.0.0.1 port 0),
 * plus a tiny client. Every server started here is closed by the root after-hook.
 *
 * HILT_STORAGE=postgres in the test run's environment puts every test server that does not
 * choose its engine on the PostgreSQL the tests start (test/helpers/postgres.ts), one database
 * per data folder: a test that restarts a server on its data folder finds its data again.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { newKeyText } from '../../lib/sealed';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { DEFAULTS, Config } from '../../src/config';
import { startService, Service, ServiceDeps } from '../../src/service';
import type { MockSwitchDriver } from '../../drivers/switch/mock';
import { SwitchError } from '../../drivers/switch/types';
import type { MockObmDriver } from '../../drivers/obm/mock';
import type { StorageKind } from '../../actors/persistence';
import { beforePostgresStops, freshDatabase } from './postgres';
import { addBodySecrets, addCredentials, addSecret, record, tee } from './secrets';
import { loggerOptions } from '../../src/redact';

export const ADMIN = { user: 'admin', password: 'admin-secret' };
export const MOCK_OBM = 'http://schema.massopencloud.org/haas/v0/obm/mock';
export const IPMI_OBM = 'http://schema.massopencloud.org/haas/v0/obm/ipmi';
export const REDFISH_OBM = 'http://schema.massopencloud.org/haas/v0/obm/redfish';
export const MOCK_SWITCH = 'http://schema.massopencloud.org/haas/v0/switches/mock';

export interface Creds { user: string; password: string }
/** A bearer token (an API token or an OpenID Connect token): docs/identity.md. */
export interface Bearer { token: string }
export interface Res { status: number; body: any; text: string; raw: Buffer; headers: Record<string, string | string[] | undefined> }

/** node:http rather than fetch: fetch refuses a GET with a body, which tests must send. */
function rawHttp(url: string, method: string, headers: Record<string, string>, payload?: string | Buffer) {
  return new Promise<{ status: number; raw: Buffer; headers: Res['headers'] }>((resolve, reject) => {
    const req = httpRequest(url, { method, headers: payload === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(payload)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, raw: Buffer.concat(chunks), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

export interface CallOpts {
  as?: Creds | Bearer | null;
  body?: unknown;
  /** sent verbatim instead of JSON.stringify(body) */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export const basic = (c: Creds) => 'Basic ' + Buffer.from(`${c.user}:${c.password}`, 'utf8').toString('base64');

export class Client {
  /** `token`: a bearer token instead of `as` (basic) */
  constructor(readonly url: string, readonly as: Creds | null = ADMIN, readonly token?: string) {}

  async call(method: string, path: string, opts: CallOpts = {}): Promise<Res> {
    const headers: Record<string, string> = { ...opts.headers };
    const who = opts.as === undefined ? (this.token !== undefined ? { token: this.token } : this.as) : opts.as;
    if (who && 'token' in who) {
      headers.authorization = `Bearer ${who.token}`;
      addSecret(who.token);
    } else if (who) {
      headers.authorization = basic(who);
      addCredentials(who.user, who.password);
    }
    addBodySecrets(opts.body);
    const payload = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
    const { status, raw, headers: resHeaders } = await rawHttp(this.url + path, method, headers, payload);
    const text = raw.toString('utf8');
    record(text, `the answer to ${method} ${path.slice(0, 100)}`);
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    // A new API token's secret is shown in this answer only: from now on it is scanned for.
    if (body && typeof body === 'object' && typeof (body as { token?: unknown }).token === 'string') addSecret((body as { token: string }).token);
    return { status, body, text, raw, headers: resHeaders };
  }

  get = (path: string, o?: CallOpts) => this.call('GET', path, o);
  put = (path: string, body?: unknown, o?: CallOpts) => this.call('PUT', path, { ...o, body });
  post = (path: string, body?: unknown, o?: CallOpts) => this.call('POST', path, { ...o, body });
  del = (path: string, o?: CallOpts) => this.call('DELETE', path, o);

  /** A client acting as someone else. */
  with(as: Creds | Bearer | null): Client {
    return as && 'token' in as ? new Client(this.url, null, as.token) : new Client(this.url, as);
  }
}

export interface TestServer extends Service {
  dataDir: string;
  api: Client;
  config: Config;
  /** the mock switches' "hardware" (their ports' VLANs) */
  mockSwitch: MockSwitchDriver;
  /** the mock BMCs (power state, boot device) */
  mockObm: MockObmDriver;
}

const open: TestServer[] = [];
/** data folders this helper made: removed when the run ends */
const made = new Set<string>();

/** The engine of test servers that do not choose one: HILT_STORAGE of the test run, else the default. */
export const TEST_STORAGE = (process.env.HILT_STORAGE ?? DEFAULTS.storage) as StorageKind;
/** data folder → its database (postgres) */
const databases = new Map<string, Promise<string>>();

/** database URL → the secret key file every test server on it reads */
const sharedKeys = new Map<string, string>();
export function sharedKeyFile(databaseUrl: string): string {
  let file = sharedKeys.get(databaseUrl);
  if (!file) {
    const dir = mkdtempSync(join(tmpdir(), 'hilt-key-'));
    made.add(dir);
    file = join(dir, 'secret.key');
    writeFileSync(file, newKeyText(), { mode: 0o600 });
    sharedKeys.set(databaseUrl, file);
  }
  return file;
}

export async function startTestServer(overrides: Partial<Config> = {}, deps: ServiceDeps = {}, dataDir?: string): Promise<TestServer> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'hilt-test-'));
  if (!dataDir) made.add(dir);
  const storage = overrides.storage ?? TEST_STORAGE;
  let databaseUrl = overrides.databaseUrl;
  if (storage === 'postgres' && !databaseUrl) {
    if (!databases.has(dir)) databases.set(dir, freshDatabase());
    databaseUrl = await databases.get(dir)!;
  }
  const config: Config = {
    ...DEFAULTS,
    host: '127.0.0.1',
    port: 0,
    dataDir: dir,
    adminUser: ADMIN.user,
    adminPassword: ADMIN.password,
    logLevel: 'silent',
    // Many tests log in with wrong passwords on purpose: login throttling has its own tests
    // (test/src/routes/logins.test.ts), elsewhere it is out of the way.
    loginMaxFailures: 1_000_000,
    ...overrides,
    storage,
    databaseUrl,
    // Every process of a standby pair reads the same key (docs/identity.md): one per database.
    ...(storage === 'postgres' && databaseUrl && !overrides.secretKeyFile ? { secretKeyFile: sharedKeyFile(databaseUrl) } : {}),
  };
  if (config.adminPassword) addCredentials(config.adminUser, config.adminPassword);
  // Every log line is scanned for secrets (test/helpers/secrets.ts): at level info when the test
  // asked for no logger, through the test's own stream otherwise.
  const logger = deps.logger && typeof deps.logger === 'object' && 'stream' in deps.logger
    ? { ...deps.logger, stream: tee((deps.logger as { stream: { write(l: string): void } }).stream) }
    : deps.logger ?? loggerOptions('info', tee());
  const svc = await startService(config, { ...deps, logger });
  const ts: TestServer = Object.assign(svc, {
    dataDir: dir, api: new Client(svc.url), config,
    mockSwitch: svc.drivers.switches.driver(MOCK_SWITCH) as MockSwitchDriver,
    mockObm: svc.drivers.obm.driver(MOCK_OBM) as MockObmDriver,
  });
  open.push(ts);
  return ts;
}

export async function stopTestServer(ts: TestServer, removeData = true): Promise<void> {
  await ts.close();
  if (removeData) rmSync(ts.dataDir, { recursive: true, force: true });
}

async function closeAll(): Promise<void> {
  for (const ts of open.splice(0)) await ts.close().catch(() => undefined);
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}
// Services on the tests' PostgreSQL close before it stops.
beforePostgresStops(closeAll);
// Whatever a test left running closes at the end of the run; many at once take a while on a loaded machine.
after(async function () {
  this.timeout(120_000);
  await closeAll();
});

/** Resolves once an event of `type` is committed to `key` (listen before the call that commits it). */
export function committed(ts: TestServer, key: string, type: string): Promise<void> {
  return new Promise((resolve) => {
    const stop = ts.world.runtime.engine.onCommit((events) => {
      if (events.some((e) => e.key === key && (e.data as { type?: string }).type === type)) {
        stop();
        resolve();
      }
    });
  });
}

/** Inventory helpers used by many tests (each asserts its own 200). */
export async function must(p: Promise<Res>, status = 200): Promise<Res> {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r;
}

export const obm = (host = 'bmc.example', type = MOCK_OBM) => ({ type, host, user: 'ipmiuser', password: 'obm-secret' });
export const mockSwitch = { type: MOCK_SWITCH, hostname: 'sw.example', username: 'swuser', password: 'switch-secret' };

/** A network operation's status once it is no longer PENDING (polled every 10 ms); fails after `timeoutMs`. */
export async function finished(api: Client, id: string, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await must(api.get(`/networking_action/${id}`));
    if (r.body.status !== 'PENDING') return r.body;
    if (Date.now() > end) throw new Error(`action ${id} still PENDING after ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 10));
  }
}

export async function makeUser(api: Client, user: string, password: string, projects: string[] = [], isAdmin = false): Promise<Creds> {
  await must(api.put(`/auth/basic/user/${user}`, { password, 'is-admin': isAdmin }));
  for (const p of projects) await must(api.post(`/auth/basic/user/${user}/add_project`, { project: p }));
  return { user, password };
}

export async function makeNode(api: Client, node: string, nics: string[] = []): Promise<void> {
  await must(api.put(`/node/${node}`, { obm: obm() }));
  for (const nic of nics) await must(api.put(`/node/${node}/nic/${nic}`, { macaddr: `de:ad:be:ef:00:${nic.length}` }));
}

/**
 * Switch `name` of the test server's mock driver answers no login (a switch gone for good) until
 * `revive()`; `logins()` counts the attempts refused.
 */
export function deadSwitch(ts: TestServer, name: string): { logins(): number; revive(): void } {
  const open = ts.mockSwitch.open;
  let logins = 0;
  ts.mockSwitch.open = async (info, signal) => {
    if (info.name !== name) return open.call(ts.mockSwitch, info, signal);
    logins++;
    throw new SwitchError(`switch ${name} does not answer`, { nothingSent: true });
  };
  return { logins: () => logins, revive: () => void (ts.mockSwitch.open = open) };
}
