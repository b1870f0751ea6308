/**
 * Configuration: defaults, then an optional JSON file (HILT_CONFIG), then the environment.
 * The environment wins over the file.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { VlanRange } from '../actors/network/pool';
import { HEADNODE_DRIVERS } from '../drivers/headnode';
import { IMAGE_NAME } from '../drivers/headnode/types';
import { STORAGE_ENGINES, StorageKind } from '../actors/persistence';
import type { DriverSettings } from '../drivers/settings';
import { INACTIVE_PORTS, InactivePorts } from '../hardware/port-hardware';
import { OVS_NAME, ovsdbRemote } from '../drivers/switch/ovs';

/** The service's settings; those its drivers read are declared in drivers/settings.ts. */
export interface Config extends DriverSettings {
  host: string;
  port: number;
  /** a request's headers and body must arrive within this (node's requestTimeout and headersTimeout); the answer, a stream's included, is not bounded by it */
  requestTimeoutMs: number;
  /** connections open at once at most (node's maxConnections): one past it is closed unanswered */
  maxConnections: number;
  /** `lmdb` (in dataDir), `memory` (tests and demos: nothing survives the process) or `postgres` (databaseUrl; active/standby) */
  storage: StorageKind;
  /** postgres: postgres://user:password@host:port/database (libpq's URL parameters, e.g. sslmode) */
  databaseUrl?: string;
  /** postgres: read connections of this process (its writer has one more of its own, its lease one) */
  databasePoolSize: number;
  /** postgres: a standby takes over when the active one has not renewed its lease for this long */
  leaseTtlMs: number;
  /** postgres: bound on each read and each commit (unset: leaseTtlMs); a commit past it is one whose outcome is unknown */
  databaseTimeoutMs?: number;
  /** postgres: this process's name in the lease, /health and pg_stat_activity (unset: host:pid) */
  instanceName?: string;
  /**
   * postgres, tests only (HILT_TEST_FENCING_ONLY=1, from the environment alone): this process
   * never notices by itself that it lost its lease, so only the database's fencing token stops
   * its writes (the failover tests prove that it does). Unsafe: its hardware calls go unguarded.
   */
  testFencingOnly?: boolean;
  vlanPool: VlanRange[];
  /** Only the database backend exists (docs/api-conventions.md §1: every call needs authentication). */
  authBackend: 'database';
  adminUser: string;
  /** unset: a password is generated and printed once at the first start */
  adminPassword?: string;
  /** the type of a headnode driver (drivers/headnode/index.ts): `qemu` (real VMs on an Open vSwitch bridge) or `mock` (in-memory VMs for labs and demos) */
  headnodeDriver: string;
  /** how often running headnode VMs are checked for having died (0: never) */
  headnodeCheckMs: number;
  /** bound on each headnode VM operation (start, stop, delete, recovery, check) */
  headnodeTimeoutMs: number;
  /** a switch port that carries none of the service's networks is shut (`shutdown`) or left as it is (`keep`) */
  inactivePorts: InactivePorts;
  /** switches read at once by GET /admin/wiring (one session each) */
  wiringConcurrency: number;
  logLevel: string;
  /** failed logins for one user name within loginWindowMs that lock the name (429) */
  loginMaxFailures: number;
  loginWindowMs: number;
  /** the first lock of a name; each next one lasts twice as long, at most loginLockMaxMs */
  loginLockMs: number;
  loginLockMaxMs: number;
  /** PEM files: both set, the service serves HTTPS */
  tlsCert?: string;
  tlsKey?: string;
  /** entity actors idle this long go to sleep (they wake from LMDB on demand) */
  actorIdleMs: number;
  askTimeoutMs: number;
  /** GET /metrics without credentials (a scraper on a private network); otherwise an admin's basic auth */
  metricsOpen: boolean;
  /** fastify's trustProxy: '' (no proxy), 'true' (any), a hop count, or the proxies' addresses (comma-separated) */
  trustProxy: string;
  /** a dashboard session ends this long after its login */
  uiSessionMinutes: number;
  /** an event stream's unread bytes at most; past it the stream is dropped (its client resumes) */
  eventsBufferBytes: number;
  /** a comment line on every event stream this often */
  eventsHeartbeatMs: number;
  /** under a stream of commits, event streams are written at most this often (their frames of that time together) */
  eventsFlushMs: number;
  /** the event streams' writes a second at most: with more streams than eventsFlushMs allows for, they are written less often */
  eventsWritesPerSecond: number;
  /** a webhook delivery's bound (each attempt) */
  webhookTimeoutMs: number;
  /** the first pause after a failed webhook delivery (it doubles each time) */
  webhookRetryMinMs: number;
  /** the longest pause between attempts of a webhook delivery */
  webhookRetryMaxMs: number;
  /** failing this long in a row marks a webhook failing (it stops until resumed) */
  webhookFailAfterMs: number;
  /** the bound of each node's console log, and the most GET /node/<node>/console answers (docs/consoles.md) */
  consoleLogBytes: number;
  /** who may type on a live console: `members` (the node's project and admins), `admins`, or `none` */
  consoleInput: ConsoleInput;
  /** a live console's viewer is pinged this often; one that answered none since the last is disconnected */
  consolePingMs: number;
  /** viewers of one node's live console at once, whoever they are; one more is refused */
  consoleViewers: number;
  /** project_detach_node powers the released node off (docs/lifecycle.md) */
  releasePowerOff: boolean;
  /** the maintenance pool's project: a node released from any other project moves into it (with maintenanceUrl) */
  maintenanceProject?: string;
  /** where the maintenance pool's notices are POSTed (with maintenanceProject) */
  maintenanceUrl?: string;
  /** key of the HMAC-SHA256 signature of each notice (X-Hilt-Signature); unset: unsigned */
  maintenanceSecret?: string;
  /** bound on each POST of a maintenance notice */
  maintenanceTimeoutMs: number;
  /** a lease may end at most this many days from when it is set */
  leaseMaxDays: number;
  /** the longest life of an API token (POST /auth/tokens `expires_in`) */
  tokenMaxSeconds: number;
  /** OpenID Connect (docs/identity.md): the issuer whose tokens are accepted (unset: none are) */
  oidcIssuer?: string;
  /** the audience (`aud`) those tokens must name; required with oidcIssuer */
  oidcAudience?: string;
  /** where the issuer's keys are (unset: the `jwks_uri` of its discovery document) */
  oidcJwksUrl?: string;
  /** PEM file of the CA certificates that sign the issuer's HTTPS certificate (unset: the system's) */
  oidcCaFile?: string;
  /** the claim naming the user */
  oidcUserClaim: string;
  /** the claim listing the user's groups */
  oidcGroupsClaim: string;
  oidcAdminGroup: string;
  oidcAuditorGroup: string;
  /** `<prefix><P>`: a member of project P; `<prefix><P>-readers`: a reader of P */
  oidcProjectPrefix: string;
  /** the key that encrypts BMC and switch credentials at rest (unset: `<dataDir>/secret.key`, made at the first start) */
  secretKeyFile?: string;
  /**
   * journal retention (docs/operations.md, Journal retention): the events of objects deleted longer
   * ago than this many days, and their audit entries, move to the archive (0: the journal keeps
   * everything; fractions of a day are allowed)
   */
  journalRetentionDays: number;
  /** where retention's archive goes: one gzip file of JSON lines per month (unset: `<dataDir>/archive`) */
  archiveDir?: string;
  /**
   * the read model's checkpoint (docs/checkpoint.md): written in the background once this many
   * events committed since the last one, and at a clean stop (0: none; every start rebuilds from the journal)
   */
  checkpointEvents: number;
  /**
   * the read model's cache of show_node answers as sent, in MiB (one byte a character; 0: none):
   * read every node of a large site and it holds them all (docs/operations.md)
   */
  answerCacheMiB: number;
}

export const CONSOLE_INPUT = ['members', 'admins', 'none'] as const;
/** The most HILT_CONSOLE_LOG_BYTES may be (see loadConfig). */
export const MAX_CONSOLE_LOG_BYTES = 64 << 20;
export type ConsoleInput = (typeof CONSOLE_INPUT)[number];

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 5000,
  requestTimeoutMs: 30_000,
  maxConnections: 4096,
  dataDir: './data',
  storage: 'lmdb',
  databasePoolSize: 8,
  leaseTtlMs: 5_000,
  vlanPool: [[1000, 1999]],
  authBackend: 'database',
  adminUser: 'admin',
  baseImages: ['base-headnode'],
  headnodeDriver: 'qemu',
  headnodeImagesDir: './images',
  ovsBridge: 'br-hilt',
  headnodeAccel: 'tcg',
  headnodeMemoryMb: 512,
  headnodeCheckMs: 5_000,
  headnodeTimeoutMs: 120_000,
  mockHeadnodeDelayMs: 0,
  mockSwitchDelayMs: 0,
  mockSwitchSessionDelayMs: 0,
  mockSwitchFailPorts: [],
  switchTimeoutMs: 30_000,
  switchSave: true,
  inactivePorts: 'shutdown',
  wiringConcurrency: 8,
  obmTimeoutMs: 10_000,
  logLevel: 'info',
  loginMaxFailures: 10,
  loginWindowMs: 60_000,
  loginLockMs: 60_000,
  loginLockMaxMs: 300_000,
  actorIdleMs: 60_000,
  askTimeoutMs: 30_000,
  metricsOpen: false,
  trustProxy: '',
  uiSessionMinutes: 480,
  eventsBufferBytes: 1024 * 1024,
  eventsHeartbeatMs: 15_000,
  eventsFlushMs: 10,
  eventsWritesPerSecond: 5_000,
  webhookTimeoutMs: 10_000,
  webhookRetryMinMs: 1_000,
  webhookRetryMaxMs: 300_000,
  webhookFailAfterMs: 24 * 3600_000,
  consoleLogBytes: 1 << 20,
  consoleInput: 'members',
  consolePingMs: 30_000,
  consoleViewers: 16,
  releasePowerOff: true,
  maintenanceTimeoutMs: 10_000,
  leaseMaxDays: 90,
  tokenMaxSeconds: 90 * 86_400,
  oidcUserClaim: 'preferred_username',
  oidcGroupsClaim: 'groups',
  oidcAdminGroup: 'hilt-admins',
  oidcAuditorGroup: 'hilt-auditors',
  oidcProjectPrefix: 'hilt-project-',
  journalRetentionDays: 365,
  checkpointEvents: 20_000,
  answerCacheMiB: 64,
};

/** Is `host` a loopback address or name (127.0.0.0/8, ::1, localhost)? */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The warning a start gives when passwords would cross the network in the clear: basic
 * authentication over plain HTTP on an address other than the loopback. Null when none is due.
 */
export function plainHttpWarning(c: Pick<Config, 'host' | 'tlsCert'>): string | null {
  if (c.tlsCert || isLoopback(c.host)) return null;
  return `listening on ${c.host} over plain HTTP: every client's password crosses the network in the clear (HTTP basic authentication). Set HILT_TLS_CERT and HILT_TLS_KEY to serve HTTPS, or listen on the loopback behind a TLS proxy`;
}

/** "1000-1999,3000-3099" → [[1000,1999],[3000,3099]]; ids must lie in 1..4096. */
export function parseVlanPool(text: string): VlanRange[] {
  return text.split(',').map((part) => {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(part);
    if (!m) throw new Error(`bad VLAN pool range "${part}" (expected e.g. 1000-1999)`);
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    if (lo < 1 || hi > 4096 || lo > hi) throw new Error(`bad VLAN pool range "${part}" (ids are 1..4096)`);
    return [lo, hi] as VlanRange;
  });
}

/** Settings without a default value, also allowed in the file. */
export const OPTIONAL_KEYS = ['adminPassword', 'ipmiCipherSuite', 'ovsDb', 'databaseUrl', 'databaseTimeoutMs', 'instanceName', 'tlsCert', 'tlsKey', 'maintenanceProject', 'maintenanceUrl', 'maintenanceSecret',
  'oidcIssuer', 'oidcAudience', 'oidcJwksUrl', 'oidcCaFile', 'secretKeyFile', 'archiveDir'];
const ACCELS = ['tcg', 'kvm'] as const;

function oneOf<T extends string>(name: string, v: string, values: readonly T[]): T {
  if (!(values as readonly string[]).includes(v)) throw new Error(`${name} must be one of ${values.join(', ')}, got "${v}"`);
  return v as T;
}

/** Base image names: a list, or a comma-separated string; each a file name stem. */
function imageNames(v: unknown): string[] {
  const list = typeof v === 'string' ? v.split(',').map((x) => x.trim()).filter(Boolean) : v;
  if (!Array.isArray(list) || list.some((x) => typeof x !== 'string' || !IMAGE_NAME.test(x))) {
    throw new Error(`base images (HIL_BASE_IMG, baseImages) must be names of letters, digits and ._+- , got ${JSON.stringify(v)}`);
  }
  return list as string[];
}

function bool(name: string, v: string): boolean {
  if (/^(1|true|on|yes)$/i.test(v)) return true;
  if (/^(0|false|off|no)$/i.test(v)) return false;
  throw new Error(`${name} must be true or false, got "${v}"`);
}

function int(name: string, v: string): number {
  if (!/^\d+$/.test(v)) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
  return Number(v);
}

/** A number of days, 0 or more; fractions allowed. */
function days(name: string, v: string): number {
  if (!/^\d+(\.\d+)?$/.test(v)) throw new Error(`${name} must be a number of days, 0 or more (0: keep everything), got "${v}"`);
  return Number(v);
}

function flag(name: string, v: string): boolean {
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw new Error(`${name} must be 1 or 0 (true or false), got "${v}"`);
}

/** fastify's trustProxy option from the setting (see Config.trustProxy). */
export function trustProxyOption(v: string): boolean | number | string[] {
  if (v === '' || v === 'false') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

/**
 * A file's value must have its setting's type (a count or a bound: an integer, 0 or more), as
 * the environment's parsers demand: `"port": "abc"` would otherwise have listened on a Unix
 * socket named abc, and a timeout of "ten" or null have bounded nothing.
 */
function fileValue(file: string, k: string, v: unknown): unknown {
  const d = k === 'databaseTimeoutMs' ? 0 : (DEFAULTS as unknown as Record<string, unknown>)[k] ?? '';
  const bad = (what: string) => new Error(`setting "${k}" in ${file} must be ${what}, got ${JSON.stringify(v)}`);
  if (k === 'vlanPool') {
    if (typeof v === 'string') return parseVlanPool(v);
    if (!Array.isArray(v) || !v.every((r) => Array.isArray(r) && r.length === 2 && r.every(Number.isInteger))) throw bad('a VLAN pool ("1000-1999,3000-3099")');
    return parseVlanPool(v.map((r: number[]) => r.join('-')).join(','));
  }
  if (k === 'baseImages') return v; // a list or a comma-separated string: imageNames() checks it
  if (Array.isArray(d)) {
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad('a list of strings');
  } else if (typeof d === 'number') {
    if (typeof v !== 'number' || !(v >= 0) || (k !== 'journalRetentionDays' && !Number.isInteger(v))) throw bad('a number, 0 or more');
  } else if (typeof v !== typeof d) {
    throw bad(typeof d === 'boolean' ? 'true or false' : 'a string');
  }
  return v;
}

/** pino's levels (HILT_LOG_LEVEL). */
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * The trusted proxies as fastify reads them (addresses, address/prefix or address/netmask ranges,
 * or the names loopback, linklocal, uniquelocal): refused here, naming the setting, rather than
 * by fastify once the store is open.
 */
function checkTrustProxy(v: string): void {
  const list = trustProxyOption(v);
  if (!Array.isArray(list)) return;
  for (const p of list) {
    if (p === 'loopback' || p === 'linklocal' || p === 'uniquelocal') continue;
    const [addr, bits, ...rest] = p.split('/');
    const family = isIP(addr);
    const prefixOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)) || (family === 4 && isIP(bits) === 4);
    if (!family || rest.length || !prefixOk) {
      throw new Error(`HILT_TRUST_PROXY (trustProxy) must be true, a hop count, or the proxies' addresses or ranges (address/prefix), comma-separated; "${p}" is none of them`);
    }
  }
}

/**
 * Whether PostgreSQL's client can read the URL, with the parser it uses itself (pg's own
 * dependency, loaded only when a URL is given). A URL it cannot read fails every connection, the
 * first as the last: the start must refuse it rather than stand by waiting for the database.
 */
function readableDatabaseUrl(url: string): boolean {
  const pgPath = require.resolve('pg');
  const { parse } = require(require.resolve('pg-connection-string', { paths: [pgPath] })) as { parse(url: string): unknown };
  try {
    parse(url);
    return true;
  } catch {
    return false;
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cfg: Config = { ...DEFAULTS };
  if (env.HILT_CONFIG) {
    let file: Record<string, unknown>;
    try {
      file = JSON.parse(readFileSync(env.HILT_CONFIG, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`cannot read the settings file ${env.HILT_CONFIG} (HILT_CONFIG): ${(err as Error).message}`);
    }
    if (!file || typeof file !== 'object' || Array.isArray(file)) throw new Error(`the settings file ${env.HILT_CONFIG} (HILT_CONFIG) must hold a JSON object of settings`);
    for (const [k, v] of Object.entries(file)) {
      if (!(k in DEFAULTS) && !OPTIONAL_KEYS.includes(k)) throw new Error(`unknown setting "${k}" in ${env.HILT_CONFIG}`);
      (cfg as unknown as Record<string, unknown>)[k] = fileValue(env.HILT_CONFIG, k, v);
    }
  }
  if (env.HILT_HOST) cfg.host = env.HILT_HOST;
  if (env.HILT_PORT) cfg.port = int('HILT_PORT', env.HILT_PORT);
  if (env.HILT_REQUEST_TIMEOUT_MS) cfg.requestTimeoutMs = int('HILT_REQUEST_TIMEOUT_MS', env.HILT_REQUEST_TIMEOUT_MS);
  if (env.HILT_MAX_CONNECTIONS) cfg.maxConnections = int('HILT_MAX_CONNECTIONS', env.HILT_MAX_CONNECTIONS);
  if (env.HILT_DATA_DIR) cfg.dataDir = env.HILT_DATA_DIR;
  if (env.HILT_STORAGE) cfg.storage = oneOf('HILT_STORAGE', env.HILT_STORAGE, STORAGE_ENGINES);
  if (env.HILT_DATABASE_URL) cfg.databaseUrl = env.HILT_DATABASE_URL;
  if (env.HILT_DATABASE_POOL_SIZE) cfg.databasePoolSize = int('HILT_DATABASE_POOL_SIZE', env.HILT_DATABASE_POOL_SIZE);
  if (env.HILT_LEASE_TTL_MS) cfg.leaseTtlMs = int('HILT_LEASE_TTL_MS', env.HILT_LEASE_TTL_MS);
  if (env.HILT_DATABASE_TIMEOUT_MS) cfg.databaseTimeoutMs = int('HILT_DATABASE_TIMEOUT_MS', env.HILT_DATABASE_TIMEOUT_MS);
  if (env.HILT_INSTANCE_NAME) cfg.instanceName = env.HILT_INSTANCE_NAME;
  if (env.HILT_TEST_FENCING_ONLY) cfg.testFencingOnly = flag('HILT_TEST_FENCING_ONLY', env.HILT_TEST_FENCING_ONLY);
  if (env.HILT_VLAN_POOL) cfg.vlanPool = parseVlanPool(env.HILT_VLAN_POOL);
  if (env.HILT_ADMIN_USER) cfg.adminUser = env.HILT_ADMIN_USER;
  if (env.HILT_ADMIN_PASSWORD) cfg.adminPassword = env.HILT_ADMIN_PASSWORD;
  if (env.HIL_BASE_IMG) cfg.baseImages = imageNames(env.HIL_BASE_IMG);
  if (env.HILT_HEADNODE_DRIVER) cfg.headnodeDriver = oneOf('HILT_HEADNODE_DRIVER', env.HILT_HEADNODE_DRIVER, HEADNODE_DRIVERS.types());
  if (env.HILT_HEADNODE_IMAGES) cfg.headnodeImagesDir = env.HILT_HEADNODE_IMAGES;
  if (env.HILT_OVS_BRIDGE) cfg.ovsBridge = env.HILT_OVS_BRIDGE;
  if (env.HILT_OVS_DB) cfg.ovsDb = env.HILT_OVS_DB;
  if (env.HILT_HEADNODE_ACCEL) cfg.headnodeAccel = oneOf('HILT_HEADNODE_ACCEL', env.HILT_HEADNODE_ACCEL, ACCELS);
  if (env.HILT_HEADNODE_MEMORY_MB) cfg.headnodeMemoryMb = int('HILT_HEADNODE_MEMORY_MB', env.HILT_HEADNODE_MEMORY_MB);
  if (env.HILT_HEADNODE_CHECK_MS) cfg.headnodeCheckMs = int('HILT_HEADNODE_CHECK_MS', env.HILT_HEADNODE_CHECK_MS);
  if (env.HILT_HEADNODE_TIMEOUT_MS) cfg.headnodeTimeoutMs = int('HILT_HEADNODE_TIMEOUT_MS', env.HILT_HEADNODE_TIMEOUT_MS);
  if (env.HILT_MOCK_HEADNODE_DELAY_MS) cfg.mockHeadnodeDelayMs = int('HILT_MOCK_HEADNODE_DELAY_MS', env.HILT_MOCK_HEADNODE_DELAY_MS);
  if (env.HILT_MOCK_SWITCH_DELAY_MS) cfg.mockSwitchDelayMs = int('HILT_MOCK_SWITCH_DELAY_MS', env.HILT_MOCK_SWITCH_DELAY_MS);
  if (env.HILT_MOCK_SWITCH_SESSION_DELAY_MS) cfg.mockSwitchSessionDelayMs = int('HILT_MOCK_SWITCH_SESSION_DELAY_MS', env.HILT_MOCK_SWITCH_SESSION_DELAY_MS);
  if (env.HILT_MOCK_SWITCH_FAIL_PORTS) cfg.mockSwitchFailPorts = env.HILT_MOCK_SWITCH_FAIL_PORTS.split(',').map((s) => s.trim()).filter(Boolean);
  if (env.HILT_SWITCH_TIMEOUT_MS) cfg.switchTimeoutMs = int('HILT_SWITCH_TIMEOUT_MS', env.HILT_SWITCH_TIMEOUT_MS);
  if (env.HILT_SWITCH_SAVE) cfg.switchSave = bool('HILT_SWITCH_SAVE', env.HILT_SWITCH_SAVE);
  if (env.HILT_INACTIVE_PORTS) cfg.inactivePorts = oneOf('HILT_INACTIVE_PORTS', env.HILT_INACTIVE_PORTS, INACTIVE_PORTS);
  if (env.HILT_WIRING_CONCURRENCY) cfg.wiringConcurrency = int('HILT_WIRING_CONCURRENCY', env.HILT_WIRING_CONCURRENCY);
  if (env.HILT_IPMI_CIPHER_SUITE) cfg.ipmiCipherSuite = env.HILT_IPMI_CIPHER_SUITE;
  if (env.HILT_OBM_TIMEOUT_MS) cfg.obmTimeoutMs = int('HILT_OBM_TIMEOUT_MS', env.HILT_OBM_TIMEOUT_MS);
  if (env.HILT_LOG_LEVEL) cfg.logLevel = env.HILT_LOG_LEVEL;
  if (env.HILT_ACTOR_IDLE_MS) cfg.actorIdleMs = int('HILT_ACTOR_IDLE_MS', env.HILT_ACTOR_IDLE_MS);
  if (env.HILT_JOURNAL_RETENTION_DAYS) cfg.journalRetentionDays = days('HILT_JOURNAL_RETENTION_DAYS', env.HILT_JOURNAL_RETENTION_DAYS);
  if (env.HILT_ARCHIVE_DIR) cfg.archiveDir = env.HILT_ARCHIVE_DIR;
  if (env.HILT_CHECKPOINT_EVENTS) cfg.checkpointEvents = int('HILT_CHECKPOINT_EVENTS', env.HILT_CHECKPOINT_EVENTS);
  if (env.HILT_ANSWER_CACHE_MIB) cfg.answerCacheMiB = int('HILT_ANSWER_CACHE_MIB', env.HILT_ANSWER_CACHE_MIB);
  if (env.HILT_METRICS_OPEN) cfg.metricsOpen = flag('HILT_METRICS_OPEN', env.HILT_METRICS_OPEN);
  if (env.HILT_TRUST_PROXY !== undefined) cfg.trustProxy = env.HILT_TRUST_PROXY.trim();
  if (env.HILT_UI_SESSION_MINUTES) cfg.uiSessionMinutes = int('HILT_UI_SESSION_MINUTES', env.HILT_UI_SESSION_MINUTES);
  if (env.HILT_CONSOLE_LOG_BYTES) cfg.consoleLogBytes = int('HILT_CONSOLE_LOG_BYTES', env.HILT_CONSOLE_LOG_BYTES);
  if (env.HILT_CONSOLE_INPUT) cfg.consoleInput = oneOf('HILT_CONSOLE_INPUT', env.HILT_CONSOLE_INPUT, CONSOLE_INPUT);
  if (env.HILT_CONSOLE_PING_MS) cfg.consolePingMs = int('HILT_CONSOLE_PING_MS', env.HILT_CONSOLE_PING_MS);
  if (env.HILT_CONSOLE_VIEWERS) cfg.consoleViewers = int('HILT_CONSOLE_VIEWERS', env.HILT_CONSOLE_VIEWERS);
  if (env.HILT_LOGIN_MAX_FAILURES) cfg.loginMaxFailures = int('HILT_LOGIN_MAX_FAILURES', env.HILT_LOGIN_MAX_FAILURES);
  if (env.HILT_LOGIN_LOCK_MS) cfg.loginLockMs = int('HILT_LOGIN_LOCK_MS', env.HILT_LOGIN_LOCK_MS);
  if (env.HILT_LOGIN_LOCK_MAX_MS) cfg.loginLockMaxMs = int('HILT_LOGIN_LOCK_MAX_MS', env.HILT_LOGIN_LOCK_MAX_MS);
  if (env.HILT_EVENTS_BUFFER_BYTES) cfg.eventsBufferBytes = int('HILT_EVENTS_BUFFER_BYTES', env.HILT_EVENTS_BUFFER_BYTES);
  if (env.HILT_EVENTS_HEARTBEAT_MS) cfg.eventsHeartbeatMs = int('HILT_EVENTS_HEARTBEAT_MS', env.HILT_EVENTS_HEARTBEAT_MS);
  if (env.HILT_EVENTS_FLUSH_MS) cfg.eventsFlushMs = int('HILT_EVENTS_FLUSH_MS', env.HILT_EVENTS_FLUSH_MS);
  if (env.HILT_EVENTS_WRITES_PER_SECOND) cfg.eventsWritesPerSecond = int('HILT_EVENTS_WRITES_PER_SECOND', env.HILT_EVENTS_WRITES_PER_SECOND);
  if (env.HILT_WEBHOOK_TIMEOUT_MS) cfg.webhookTimeoutMs = int('HILT_WEBHOOK_TIMEOUT_MS', env.HILT_WEBHOOK_TIMEOUT_MS);
  if (env.HILT_WEBHOOK_RETRY_MIN_MS) cfg.webhookRetryMinMs = int('HILT_WEBHOOK_RETRY_MIN_MS', env.HILT_WEBHOOK_RETRY_MIN_MS);
  if (env.HILT_WEBHOOK_RETRY_MAX_MS) cfg.webhookRetryMaxMs = int('HILT_WEBHOOK_RETRY_MAX_MS', env.HILT_WEBHOOK_RETRY_MAX_MS);
  if (env.HILT_WEBHOOK_FAIL_AFTER_MS) cfg.webhookFailAfterMs = int('HILT_WEBHOOK_FAIL_AFTER_MS', env.HILT_WEBHOOK_FAIL_AFTER_MS);
  if (env.HILT_TLS_CERT) cfg.tlsCert = env.HILT_TLS_CERT;
  if (env.HILT_TLS_KEY) cfg.tlsKey = env.HILT_TLS_KEY;
  if (env.HILT_RELEASE_POWER_OFF) cfg.releasePowerOff = bool('HILT_RELEASE_POWER_OFF', env.HILT_RELEASE_POWER_OFF);
  if (env.HILT_MAINTENANCE_PROJECT) cfg.maintenanceProject = env.HILT_MAINTENANCE_PROJECT;
  if (env.HILT_MAINTENANCE_URL) cfg.maintenanceUrl = env.HILT_MAINTENANCE_URL;
  if (env.HILT_MAINTENANCE_SECRET) cfg.maintenanceSecret = env.HILT_MAINTENANCE_SECRET;
  if (env.HILT_MAINTENANCE_TIMEOUT_MS) cfg.maintenanceTimeoutMs = int('HILT_MAINTENANCE_TIMEOUT_MS', env.HILT_MAINTENANCE_TIMEOUT_MS);
  if (env.HILT_LEASE_MAX_DAYS) cfg.leaseMaxDays = int('HILT_LEASE_MAX_DAYS', env.HILT_LEASE_MAX_DAYS);
  if (env.HILT_TOKEN_MAX_SECONDS) cfg.tokenMaxSeconds = int('HILT_TOKEN_MAX_SECONDS', env.HILT_TOKEN_MAX_SECONDS);
  if (env.HILT_OIDC_ISSUER) cfg.oidcIssuer = env.HILT_OIDC_ISSUER;
  if (env.HILT_OIDC_AUDIENCE) cfg.oidcAudience = env.HILT_OIDC_AUDIENCE;
  if (env.HILT_OIDC_JWKS_URL) cfg.oidcJwksUrl = env.HILT_OIDC_JWKS_URL;
  if (env.HILT_OIDC_CA_FILE) cfg.oidcCaFile = env.HILT_OIDC_CA_FILE;
  if (env.HILT_OIDC_USER_CLAIM) cfg.oidcUserClaim = env.HILT_OIDC_USER_CLAIM;
  if (env.HILT_OIDC_GROUPS_CLAIM) cfg.oidcGroupsClaim = env.HILT_OIDC_GROUPS_CLAIM;
  if (env.HILT_OIDC_ADMIN_GROUP) cfg.oidcAdminGroup = env.HILT_OIDC_ADMIN_GROUP;
  if (env.HILT_OIDC_AUDITOR_GROUP) cfg.oidcAuditorGroup = env.HILT_OIDC_AUDITOR_GROUP;
  if (env.HILT_OIDC_PROJECT_PREFIX) cfg.oidcProjectPrefix = env.HILT_OIDC_PROJECT_PREFIX;
  if (env.HILT_SECRET_KEY_FILE) cfg.secretKeyFile = env.HILT_SECRET_KEY_FILE;
  if (cfg.port > 65535) throw new Error(`HILT_PORT (port) must be a port number, 0 to 65535, got ${cfg.port}`);
  oneOf('HILT_LOG_LEVEL', cfg.logLevel, LOG_LEVELS);
  // A bound under a second would cut an ordinary client on a busy link.
  if (!Number.isInteger(cfg.requestTimeoutMs) || cfg.requestTimeoutMs < 1000) throw new Error(`HILT_REQUEST_TIMEOUT_MS (requestTimeoutMs) must be an integer of at least 1000, got ${cfg.requestTimeoutMs}`);
  if (!Number.isInteger(cfg.maxConnections) || cfg.maxConnections < 1) throw new Error(`HILT_MAX_CONNECTIONS (maxConnections) must be a positive integer, got ${cfg.maxConnections}`);
  if (!cfg.tlsCert !== !cfg.tlsKey) throw new Error('HILT_TLS_CERT and HILT_TLS_KEY go together: set both (HTTPS) or neither (plain HTTP)');
  if (cfg.loginMaxFailures < 1) throw new Error('HILT_LOGIN_MAX_FAILURES must be at least 1');
  // The file's values too.
  cfg.baseImages = imageNames(cfg.baseImages as unknown);
  oneOf('headnodeDriver', cfg.headnodeDriver, HEADNODE_DRIVERS.types());
  oneOf('headnodeAccel', cfg.headnodeAccel, ACCELS);
  oneOf('storage', cfg.storage, STORAGE_ENGINES);
  oneOf('inactivePorts', cfg.inactivePorts, INACTIVE_PORTS);
  if (!Number.isInteger(cfg.wiringConcurrency) || cfg.wiringConcurrency < 1) throw new Error('HILT_WIRING_CONCURRENCY must be a positive integer');
  if (cfg.storage === 'postgres' && !cfg.databaseUrl) throw new Error('HILT_STORAGE=postgres needs HILT_DATABASE_URL (postgres://user:password@host:port/database)');
  if (cfg.databaseUrl && !/^postgres(ql)?:\/\//.test(cfg.databaseUrl)) throw new Error('HILT_DATABASE_URL must be a postgres:// or postgresql:// URL');
  if (cfg.databaseUrl && !readableDatabaseUrl(cfg.databaseUrl)) {
    // Its own words are not repeated: they may quote the URL, password included.
    throw new Error('HILT_DATABASE_URL cannot be read as a URL: characters such as # / ? @ in the user name or password must be percent-encoded (# as %23, / as %2F), and a port must be a number up to 65535');
  }
  // Renewals run every second at most: a shorter TTL would be lost to one slow renewal.
  if (cfg.leaseTtlMs < 1000) throw new Error(`HILT_LEASE_TTL_MS must be at least 1000, got ${cfg.leaseTtlMs}`);
  if (cfg.databasePoolSize < 1) throw new Error('HILT_DATABASE_POOL_SIZE must be at least 1');
  if (cfg.databaseTimeoutMs !== undefined && !(Number.isInteger(cfg.databaseTimeoutMs) && cfg.databaseTimeoutMs >= 100)) {
    throw new Error(`HILT_DATABASE_TIMEOUT_MS must be an integer of at least 100, got ${cfg.databaseTimeoutMs}`);
  }
  if (typeof cfg.metricsOpen !== 'boolean') throw new Error('metricsOpen must be true or false');
  if (typeof cfg.trustProxy !== 'string') throw new Error('trustProxy must be a string (e.g. "127.0.0.1" or "1")');
  checkTrustProxy(cfg.trustProxy);
  if (!Number.isInteger(cfg.uiSessionMinutes) || cfg.uiSessionMinutes < 1) throw new Error('uiSessionMinutes must be a positive integer');
  for (const k of ['eventsBufferBytes', 'eventsHeartbeatMs', 'eventsFlushMs', 'eventsWritesPerSecond', 'webhookTimeoutMs', 'webhookRetryMinMs', 'webhookRetryMaxMs', 'webhookFailAfterMs'] as const) {
    if (!Number.isInteger(cfg[k]) || cfg[k] < 1) throw new Error(`${k} must be a positive integer`);
  }
  // Each read of a log takes about three times this in memory, and each new viewer is sent up to
  // this much: 64 MiB is over an hour and a half of a 115200-baud line printing without a pause.
  if (!Number.isInteger(cfg.consoleLogBytes) || cfg.consoleLogBytes < 1024 || cfg.consoleLogBytes > MAX_CONSOLE_LOG_BYTES) {
    throw new Error(`HILT_CONSOLE_LOG_BYTES must be an integer from 1024 to ${MAX_CONSOLE_LOG_BYTES} (64 MiB), got ${cfg.consoleLogBytes}`);
  }
  oneOf('consoleInput', cfg.consoleInput, CONSOLE_INPUT);
  if (!Number.isInteger(cfg.consolePingMs) || cfg.consolePingMs < 100) throw new Error(`HILT_CONSOLE_PING_MS must be an integer of at least 100, got ${cfg.consolePingMs}`);
  if (!Number.isInteger(cfg.consoleViewers) || cfg.consoleViewers < 1) throw new Error(`HILT_CONSOLE_VIEWERS must be a positive integer, got ${cfg.consoleViewers}`);
  checkLifecycle(cfg);
  // The headnodes' Open vSwitch settings, as the OVS switch driver takes its own: read here, so that
  // a bad one stops the start rather than fail every headnode start (502).
  if (typeof cfg.ovsBridge !== 'string' || !OVS_NAME.test(cfg.ovsBridge)) throw new Error(`HILT_OVS_BRIDGE (ovsBridge) must be an Open vSwitch bridge name (1 to 15 of A-Z a-z 0-9 _ . -, not starting with - or .), got ${JSON.stringify(cfg.ovsBridge)}`);
  if (cfg.ovsDb !== undefined) ovsdbRemote(cfg.ovsDb);
  if (typeof cfg.journalRetentionDays !== 'number' || !(cfg.journalRetentionDays >= 0)) throw new Error('journalRetentionDays must be a number of days, 0 or more (0: keep everything)');
  if (!Number.isInteger(cfg.tokenMaxSeconds) || cfg.tokenMaxSeconds < 1) throw new Error('HILT_TOKEN_MAX_SECONDS (tokenMaxSeconds) must be a positive integer');
  if (!cfg.oidcIssuer !== !cfg.oidcAudience) throw new Error('HILT_OIDC_ISSUER and HILT_OIDC_AUDIENCE go together: set both (OpenID Connect) or neither');
  for (const [k, v] of [['HILT_OIDC_ISSUER', cfg.oidcIssuer], ['HILT_OIDC_JWKS_URL', cfg.oidcJwksUrl]] as const) {
    if (v !== undefined && !/^https:\/\//.test(v)) throw new Error(`${k} must be an https:// URL (the issuer's keys must not be fetched in the clear), got "${v}"`);
  }
  return cfg;
}

/**
 * The tenant lifecycle's settings (docs/lifecycle.md): the maintenance pool needs its project and
 * its URL together; whether the project exists is checked once storage is open (src/lifecycle/).
 */
export function checkLifecycle(cfg: Config): void {
  if (typeof cfg.releasePowerOff !== 'boolean') throw new Error('releasePowerOff must be true or false');
  if (!cfg.maintenanceProject !== !cfg.maintenanceUrl) {
    throw new Error('HILT_MAINTENANCE_PROJECT and HILT_MAINTENANCE_URL go together: set both (a maintenance pool) or neither');
  }
  if (cfg.maintenanceUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(cfg.maintenanceUrl);
    } catch {
      // said below
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new Error('HILT_MAINTENANCE_URL must be an http:// or https:// URL');
    // Its credentials go as basic authentication, percent-decoded (src/lifecycle/maintenance.ts):
    // said here, without the URL, rather than as a bare "URI malformed" when the pool starts.
    try {
      decodeURIComponent(url.username);
      decodeURIComponent(url.password);
    } catch {
      throw new Error('HILT_MAINTENANCE_URL has a user or password whose percent-encoding is malformed (a % must start %XX of UTF-8): encode them with encodeURIComponent');
    }
  }
  if (cfg.maintenanceSecret !== undefined && !cfg.maintenanceUrl) throw new Error('HILT_MAINTENANCE_SECRET signs the maintenance pool\'s notices: it needs HILT_MAINTENANCE_PROJECT and HILT_MAINTENANCE_URL');
  if (!Number.isInteger(cfg.maintenanceTimeoutMs) || cfg.maintenanceTimeoutMs < 100) throw new Error(`HILT_MAINTENANCE_TIMEOUT_MS must be an integer of at least 100, got ${cfg.maintenanceTimeoutMs}`);
  if (!Number.isInteger(cfg.leaseMaxDays) || cfg.leaseMaxDays < 1) throw new Error(`HILT_LEASE_MAX_DAYS must be a positive integer, got ${cfg.leaseMaxDays}`);
}
