/**
 * A Redfish BMC for tests: a small node:https server on 127.0.0.1 (TLS with a self-signed
 * certificate made at start by `openssl req`, removed at stop), shaped after the DMTF Redfish
 * schema for what a power driver touches:
 *
 * - the service root (`#ServiceRoot`, readable without credentials, `Links.Sessions`);
 * - the SessionService and its Sessions collection: `POST` with `{UserName, Password}` answers
 *   201 with `X-Auth-Token` and `Location`; `DELETE` of the session logs out; a limited number
 *   of sessions (`Base.SessionLimitExceeded`, 503, as small BMCs do);
 * - HTTP basic authentication beside sessions (or instead of them: `sessionService: false`);
 * - the Systems collection and each ComputerSystem: `PowerState`, `Boot` (override target,
 *   enabled, mode, with their allowable values), `Actions.#ComputerSystem.Reset` with `target`
 *   and `ResetType@Redfish.AllowableValues` (or an `@Redfish.ActionInfo` resource instead, as
 *   OpenBMC does), `@odata.etag` and an `ETag` header; a `PATCH` needs a matching `If-Match`
 *   (412 when stale, 428 when missing);
 * - errors as Redfish bodies: `{"error": {code, message, "@Message.ExtendedInfo": [...]}}` with
 *   messages of the Base registry.
 *
 * The simulated machine behaves like a server's: a reset that starts it boots it once from the
 * override target and a `Once` override then falls back to `Disabled`; it refuses `On` when on,
 * `ForceOff` when off and restarts when off (409, as iDRAC does), so a client must look first.
 *
 * Failure modes: a wrong password (401 at login), `hang` (requests are read and never
 * answered), `refuseResets` (every reset refused with the given ExtendedInfo text), a reduced
 * `resetTypes` list (e.g. a BMC without `ForceRestart`), `expireSessions()` (the BMC forgot its
 * sessions, as after a session timeout), `loginDelayMs` (a login answered late, its session
 * already made).
 *
 * What the BMC was told is in `events` (`login admin`, `reset ForceRestart`, `boot Pxe Once`,
 * `booted Pxe`, `logout 3`...) and every request in `requests`.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const ALL_RESET_TYPES = [
  'On', 'ForceOff', 'GracefulShutdown', 'GracefulRestart', 'ForceRestart', 'Nmi', 'ForceOn', 'PushPowerButton', 'PowerCycle',
] as const;
export const BOOT_TARGETS = ['None', 'Pxe', 'Hdd', 'Cd', 'Usb', 'BiosSetup', 'UefiShell'] as const;
const BOOT_ENABLED = ['Disabled', 'Once', 'Continuous'] as const;
const BOOT_MODES = ['Legacy', 'UEFI'] as const;

export interface RedfishSimOptions {
  user: string;
  password: string;
  /** HTTPS with a self-signed certificate (default) or plain HTTP. */
  tls?: boolean;
  /** Ids of the ComputerSystems (default ['1']): `/redfish/v1/Systems/<id>`. */
  systems?: string[];
  /** Initial power state of every system (default Off). */
  power?: 'On' | 'Off';
  /** The ResetType values the systems allow (default: all of ALL_RESET_TYPES). */
  resetTypes?: readonly string[];
  /** Advertise the ResetType values through an ActionInfo resource instead of inline. */
  actionInfo?: boolean;
  /** Advertise no allowable values at all (a client must then assume the standard ones). */
  noAllowableValues?: boolean;
  /**
   * The BootSourceOverrideTarget values the systems allow (default: BOOT_TARGETS). OpenStack's
   * Redfish emulator, sushy-tools, allows only Pxe, Cd, Hdd and UefiHttp: no `None`.
   */
  bootTargets?: readonly string[];
  /** A SessionService (default true); without it, clients must use basic authentication. */
  sessionService?: boolean;
  /** Basic authentication accepted (default true). */
  basicAuth?: boolean;
  /** ETags on the ComputerSystem, and If-Match required on its PATCH (default true). */
  etags?: boolean;
  /** Sessions the BMC holds at once (default 4). */
  maxSessions?: number;
  /** The loopback address to listen on (default 127.0.0.1). */
  address?: '127.0.0.1' | '::1';
}

export interface SimSystem {
  id: string;
  path: string;
  PowerState: 'On' | 'Off';
  BootSourceOverrideTarget: string;
  BootSourceOverrideEnabled: string;
  BootSourceOverrideMode: string;
  /** Where each boot since start booted from: an override target, or `Hdd` (the boot order). */
  boots: string[];
  /** bumped on every change, for the ETag */
  version: number;
}

export interface SimTasks { polls: number; fail: string | null; noContent?: boolean }

export interface SimRequest { method: string; path: string; auth: 'token' | 'basic' | 'none' }

export interface RedfishSim {
  /** `https://127.0.0.1:PORT` or `https://[::1]:PORT` (or http://), the driver's `host` */
  url: string;
  port: number;
  /** PEM of the self-signed certificate (empty without TLS): what `ca_cert` needs */
  certPem: string;
  /** its file, for clients that take a path (sushy's `verify`) */
  certFile: string;
  system(id?: string): SimSystem;
  setPower(state: 'On' | 'Off', id?: string): void;
  events: string[];
  requests: SimRequest[];
  /** successful logins (sessions created) and logouts (sessions deleted by a client) */
  readonly logins: number;
  readonly logouts: number;
  activeSessions(): number;
  /** every session token the BMC ever gave out */
  tokens(): string[];
  /** Forget every session, as a BMC does when they time out. */
  expireSessions(): void;
  /** Read every request and never answer it. */
  hang: boolean;
  /** Refuse every reset (409) with this ExtendedInfo message. */
  refuseResets: string | null;
  /** Answer every reset 401, valid session or not (an account without the privilege, on a BMC that says 401 for it). */
  unauthorizedResets: boolean;
  /** Someone else changes the system just before the next PATCH arrives (its ETag goes stale). */
  changeBeforeNextPatch: boolean;
  /** The system goes off just before the next reset arrives (its OS shut it down). */
  offBeforeNextReset: boolean;
  /**
   * Resets answer 202 Accepted with a task monitor (an absolute `Location`), which answers 202 with the task
   * `Running` for `polls` reads, then 200 with the task `Completed` (the reset done then) or,
   * with `fail`, `Exception` and that message (nothing done). null: resets answer 204 at once.
   * `noContent`: once the task ended, however it ended, the monitor answers 204 once and 404
   * after, as OpenBMC's bmcweb does; the task itself stays readable at its `@odata.id`.
   */
  resetTasks: SimTasks | null;
  /** The same for a PATCH of the system (the boot override): applied when its task completes. */
  patchTasks: SimTasks | null;
  /** Answer a login this many ms after its session was made (a slow BMC); 0: at once. */
  loginDelayMs: number;
  /** Requests the server is holding (hung). */
  held(): number;
  stop(): Promise<void>;
}

const run = promisify(execFile);

/** A self-signed certificate for 127.0.0.1 (and ::1, localhost), made now in `dir`; the key never leaves it. */
export async function makeCertificate(dir: string, name = 'bmc'): Promise<{ keyFile: string; certFile: string }> {
  const keyFile = join(dir, `${name}-key.pem`);
  const certFile = join(dir, `${name}-cert.pem`);
  try {
    await run('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=hilt test ${name}`,
      '-addext', 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost',
    ], { timeout: 20_000 });
  } catch (e) {
    throw new Error(`could not make a test certificate with openssl (Debian package openssl, listed in .ci/apt-packages): ${(e as Error).message}`);
  }
  return { keyFile, certFile };
}

interface Session { id: string; token: string; user: string }

const REGISTRY = 'Base.1.13';

function message(id: string, text: string, args: string[] = [], severity = 'Critical', resolution = 'None.') {
  return {
    '@odata.type': '#Message.v1_1_1.Message',
    MessageId: `${REGISTRY}.${id}`,
    Message: text,
    MessageArgs: args,
    MessageSeverity: severity,
    Severity: severity,
    Resolution: resolution,
  };
}

class RedfishError extends Error {
  constructor(readonly status: number, readonly messages: ReturnType<typeof message>[], readonly headers: Record<string, string> = {}) {
    super(messages.map((m) => m.Message).join('; '));
  }
}

const errors = {
  noValidSession: () => new RedfishError(401, [message('NoValidSession',
    'There is no valid session established with the implementation.', [], 'Critical', 'Establish a session before attempting any operations.')]),
  unauthorized: (uri: string) => new RedfishError(401, [message('ResourceAtUriUnauthorized',
    `While accessing the resource at '${uri}', the service received an authorization error 'Invalid username or password'.`, [uri, 'Invalid username or password'],
    'Critical', 'Ensure that the appropriate access is provided for the service in order for it to access the URI.')]),
  missing: (uri: string) => new RedfishError(404, [message('ResourceMissingAtURI', `The resource at the URI '${uri}' was not found.`, [uri],
    'Critical', 'Place a valid resource at the URI or correct the URI and resubmit the request.')]),
  methodNotAllowed: (allow: string) => new RedfishError(405, [message('OperationNotAllowed',
    'The HTTP method is not allowed on this resource.', [], 'Critical', 'None.')], { Allow: allow }),
  malformed: () => new RedfishError(400, [message('MalformedJSON', 'The request body submitted was malformed JSON and could not be parsed by the receiving service.',
    [], 'Critical', 'Ensure that the request body is valid JSON and resubmit the request.')]),
  paramMissing: (action: string, param: string) => new RedfishError(400, [message('ActionParameterMissing',
    `The action '${action}' requires the parameter '${param}' to be present in the request body.`, [action, param], 'Critical',
    'Supply the action with the required parameter in the request body when the request is resubmitted.')]),
  paramNotInList: (value: string, param: string, action: string) => new RedfishError(400, [message('ActionParameterValueNotInList',
    `The value '${value}' for the parameter '${param}' in the action '${action}' is not in the list of acceptable values.`, [value, param, action], 'Warning',
    'Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed.')]),
  propertyUnknown: (prop: string) => new RedfishError(400, [message('PropertyUnknown',
    `The property '${prop}' is not in the list of valid properties for the resource.`, [prop], 'Warning',
    'Remove the unknown property from the request body and resubmit the request if the operation failed.')]),
  propertyNotWritable: (prop: string) => new RedfishError(400, [message('PropertyNotWritable',
    `The property '${prop}' is a read-only property and cannot be assigned a value.`, [prop], 'Warning',
    'Remove the property from the request body and resubmit the request if the operation failed.')]),
  propertyValueNotInList: (value: string, prop: string) => new RedfishError(400, [message('PropertyValueNotInList',
    `The value '${value}' for the property ${prop} is not in the list of acceptable values.`, [value, prop], 'Warning',
    'Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed.')]),
  preconditionFailed: () => new RedfishError(412, [message('PreconditionFailed',
    'The ETag supplied did not match the ETag required to change this resource.', [], 'Critical',
    'Try the operation again using the appropriate ETag.')]),
  preconditionRequired: () => new RedfishError(428, [message('PreconditionRequired',
    'A precondition header or annotation is required to change the resource.', [], 'Critical',
    'Try the request again with the appropriate precondition header or annotation.')]),
  sessionLimit: () => new RedfishError(503, [message('SessionLimitExceeded',
    'The session establishment failed due to the number of simultaneous sessions exceeding the limit of the implementation.', [], 'Critical',
    'Reduce the number of other sessions before trying to establish the session or increase the limit of simultaneous sessions (if supported).')]),
  conflict: (text: string) => new RedfishError(409, [message('ResourceInUse', text, [], 'Warning', 'Retry the operation later.')]),
};

const REQUEST_BODY_LIMIT = 64 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > REQUEST_BODY_LIMIT) req.destroy(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Live simulators, so none outlives the tests (stopAllRedfishSims). */
const running = new Set<RedfishSim>();

export async function startRedfishSim(opts: RedfishSimOptions): Promise<RedfishSim> {
  const tls = opts.tls ?? true;
  const etags = opts.etags ?? true;
  const sessionService = opts.sessionService ?? true;
  const basicAuth = opts.basicAuth ?? true;
  const maxSessions = opts.maxSessions ?? 4;
  const resetTypes = [...(opts.resetTypes ?? ALL_RESET_TYPES)];
  const bootTargets = [...(opts.bootTargets ?? BOOT_TARGETS)];
  const dir = mkdtempSync(join(tmpdir(), 'hilt-redfishsim-'));
  let certPem = '';
  let certFile = '';
  let key = '';
  if (tls) {
    try {
      const made = await makeCertificate(dir);
      certFile = made.certFile;
      certPem = readFileSync(made.certFile, 'utf8');
      key = readFileSync(made.keyFile, 'utf8');
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  const systems = new Map<string, SimSystem>();
  for (const id of opts.systems ?? ['1']) {
    systems.set(id, {
      id, path: `/redfish/v1/Systems/${id}`, PowerState: opts.power ?? 'Off',
      BootSourceOverrideTarget: 'None', BootSourceOverrideEnabled: 'Disabled', BootSourceOverrideMode: 'UEFI', boots: [], version: 1,
    });
  }
  const sessions = new Map<string, Session>(); // by token
  const issued: string[] = [];
  let nextSession = 1;
  const events: string[] = [];
  const requests: SimRequest[] = [];
  const sockets = new Set<Socket>();
  const heldResponses = new Set<ServerResponse>();
  let logins = 0;
  let logouts = 0;

  const etagOf = (s: SimSystem) => `"${s.id}-${s.version}"`;
  const changed = (s: SimSystem) => { s.version++; };

  /** The machine starts (from off, or a restart): it boots once from its override. */
  const boot = (s: SimSystem) => {
    s.PowerState = 'On';
    const from = s.BootSourceOverrideEnabled !== 'Disabled' && s.BootSourceOverrideTarget !== 'None' ? s.BootSourceOverrideTarget : 'Hdd';
    s.boots.push(from);
    events.push(`booted ${from}`);
    if (s.BootSourceOverrideEnabled === 'Once') s.BootSourceOverrideEnabled = 'Disabled';
    changed(s);
  };

  const serviceRoot = () => ({
    '@odata.type': '#ServiceRoot.v1_11_0.ServiceRoot',
    '@odata.id': '/redfish/v1/',
    Id: 'RootService',
    Name: 'Root Service',
    RedfishVersion: '1.15.0',
    UUID: '92384634-2938-2342-8820-489239905423',
    Systems: { '@odata.id': '/redfish/v1/Systems' },
    ...(sessionService ? { SessionService: { '@odata.id': '/redfish/v1/SessionService' } } : {}),
    Links: sessionService ? { Sessions: { '@odata.id': '/redfish/v1/SessionService/Sessions' } } : {},
  });

  const systemResource = (s: SimSystem) => {
    const action: Record<string, unknown> = { target: `${s.path}/Actions/ComputerSystem.Reset` };
    if (opts.actionInfo) action['@Redfish.ActionInfo'] = `${s.path}/ResetActionInfo`;
    else if (!opts.noAllowableValues) action['ResetType@Redfish.AllowableValues'] = resetTypes;
    return {
      '@odata.type': '#ComputerSystem.v1_20_0.ComputerSystem',
      '@odata.id': s.path,
      ...(etags ? { '@odata.etag': etagOf(s) } : {}),
      Id: s.id,
      Name: `Simulated server ${s.id}`,
      SystemType: 'Physical',
      Manufacturer: 'hilt tests',
      Model: 'redfish-sim',
      UUID: `00000000-0000-4000-8000-${s.id.padStart(12, '0').slice(-12)}`,
      PowerState: s.PowerState,
      Status: { State: 'Enabled', Health: 'OK' },
      Boot: {
        BootSourceOverrideEnabled: s.BootSourceOverrideEnabled,
        'BootSourceOverrideEnabled@Redfish.AllowableValues': BOOT_ENABLED,
        BootSourceOverrideTarget: s.BootSourceOverrideTarget,
        'BootSourceOverrideTarget@Redfish.AllowableValues': bootTargets,
        BootSourceOverrideMode: s.BootSourceOverrideMode,
        'BootSourceOverrideMode@Redfish.AllowableValues': BOOT_MODES,
      },
      Actions: { '#ComputerSystem.Reset': action },
    };
  };

  const sessionResource = (s: Session) => ({
    '@odata.type': '#Session.v1_6_0.Session',
    '@odata.id': `/redfish/v1/SessionService/Sessions/${s.id}`,
    Id: s.id,
    Name: 'User Session',
    UserName: s.user,
  });

  /** Who is asking: a session, basic credentials, or nobody (401 unless `open`). */
  const authenticate = (req: IncomingMessage): SimRequest['auth'] => {
    const token = req.headers['x-auth-token'];
    if (typeof token === 'string' && sessions.has(token)) return 'token';
    const basic = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? '');
    if (basic && basicAuth) {
      const text = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = text.indexOf(':');
      if (colon > 0 && text.slice(0, colon) === opts.user && text.slice(colon + 1) === opts.password) return 'basic';
    }
    return 'none';
  };

  const reset = (s: SimSystem, body: Record<string, unknown>) => {
    const action = 'ComputerSystem.Reset';
    if (!('ResetType' in body)) throw errors.paramMissing(action, 'ResetType');
    const type = body.ResetType;
    if (typeof type !== 'string' || !resetTypes.includes(type)) throw errors.paramNotInList(String(type), 'ResetType', action);
    if (sim.offBeforeNextReset) {
      sim.offBeforeNextReset = false;
      s.PowerState = 'Off';
      changed(s);
      events.push('went off');
    }
    if (sim.refuseResets !== null) {
      events.push(`reset refused ${type}`);
      throw errors.conflict(sim.refuseResets);
    }
    const on = s.PowerState === 'On';
    const refuse = (why: string) => { events.push(`reset refused ${type}`); return errors.conflict(why); };
    switch (type) {
      case 'On': case 'ForceOn':
        if (on) throw refuse('The system is already powered on.');
        boot(s);
        break;
      case 'ForceOff': case 'GracefulShutdown':
        if (!on) throw refuse('The system is already powered off.');
        s.PowerState = 'Off';
        changed(s);
        break;
      case 'ForceRestart': case 'GracefulRestart': case 'Nmi':
        if (!on) throw refuse(`The reset type ${type} cannot be performed while the system is powered off.`);
        if (type !== 'Nmi') boot(s);
        break;
      case 'PowerCycle':
        boot(s); // a power cycle of a system that is off powers it on
        break;
      case 'PushPowerButton':
        if (on) { s.PowerState = 'Off'; changed(s); } else boot(s);
        break;
    }
    events.push(`reset ${type}`);
  };

  const patchSystem = (s: SimSystem, req: IncomingMessage, body: Record<string, unknown>) => {
    if (sim.changeBeforeNextPatch) {
      sim.changeBeforeNextPatch = false;
      changed(s);
    }
    if (etags) {
      const match = req.headers['if-match'];
      if (match === undefined) throw errors.preconditionRequired();
      if (match !== '*' && !match.split(',').map((m) => m.trim()).includes(etagOf(s))) {
        events.push('patch refused: stale ETag');
        throw errors.preconditionFailed();
      }
    }
    const changes: Partial<Pick<SimSystem, 'BootSourceOverrideTarget' | 'BootSourceOverrideEnabled' | 'BootSourceOverrideMode'>> = {};
    for (const [k, v] of Object.entries(body)) {
      if (k !== 'Boot') {
        if (['Id', 'Name', 'PowerState', 'SystemType', 'UUID', 'Actions', 'Status'].includes(k)) throw errors.propertyNotWritable(k);
        throw errors.propertyUnknown(k);
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw errors.propertyValueNotInList(JSON.stringify(v), 'Boot');
      for (const [bk, bv] of Object.entries(v as Record<string, unknown>)) {
        const allowed = bk === 'BootSourceOverrideTarget' ? bootTargets : bk === 'BootSourceOverrideEnabled' ? BOOT_ENABLED
          : bk === 'BootSourceOverrideMode' ? BOOT_MODES : undefined;
        if (!allowed) throw errors.propertyUnknown(`Boot/${bk}`);
        if (typeof bv !== 'string' || !(allowed as readonly string[]).includes(bv)) throw errors.propertyValueNotInList(String(bv), `Boot/${bk}`);
        changes[bk as keyof typeof changes] = bv;
      }
    }
    Object.assign(s, changes);
    changed(s);
    events.push(`boot ${s.BootSourceOverrideTarget} ${s.BootSourceOverrideEnabled}`);
  };

  /** `done`: what the task does when it completes; `what`: its name in the events. */
  interface SimTask extends SimTasks { done: () => void; what: string; state: string; messages: unknown[]; gave204?: boolean }
  const tasks = new Map<string, SimTask>();
  let nextTask = 1;
  const taskResource = (id: string) => {
    const t = tasks.get(id)!;
    return {
      '@odata.type': '#Task.v1_7_1.Task', '@odata.id': `/redfish/v1/TaskService/Tasks/${id}`, Id: id, Name: 'Reset task',
      TaskState: t.state, TaskStatus: t.state === 'Exception' ? 'Critical' : 'OK', Messages: t.messages,
      TaskMonitor: `/redfish/v1/TaskService/TaskMonitors/${id}`,
    };
  };

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, {
      'OData-Version': '4.0',
      'Cache-Control': 'no-cache',
      ...(body === undefined ? {} : { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)) }),
      ...headers,
    });
    res.end(text);
  };

  const sendError = (res: ServerResponse, err: RedfishError) => {
    const single = err.messages.length === 1 ? err.messages[0]! : undefined;
    send(res, err.status, {
      error: {
        code: single?.MessageId ?? `${REGISTRY}.GeneralError`,
        message: single?.Message ?? 'A general error has occurred. See Resolution for information on how to resolve the error.',
        '@Message.ExtendedInfo': err.messages,
      },
    }, { ...err.headers, ...(err.status === 401 && basicAuth ? { 'WWW-Authenticate': 'Basic realm="Redfish"' } : {}) });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const rawPath = (req.url ?? '/').split('?')[0]!;
    const path = rawPath.length > 1 ? rawPath.replace(/\/+$/, '') : rawPath;
    const auth = authenticate(req);
    requests.push({ method, path, auth });
    const raw = await readBody(req);
    if (sim.hang) {
      heldResponses.add(res);
      res.on('close', () => heldResponses.delete(res));
      return; // never answered
    }
    let body: Record<string, unknown> = {};
    if (raw.length && (method === 'POST' || method === 'PATCH')) {
      try {
        const parsed: unknown = JSON.parse(raw.toString('utf8'));
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        throw errors.malformed();
      }
    }
    const only = (allow: string) => { if (!allow.split(', ').includes(method)) throw errors.methodNotAllowed(allow); };
    const needAuth = () => { if (auth === 'none') throw errors.noValidSession(); };

    // Open to everyone: the version document, the service root and logging in.
    if (path === '/redfish') { only('GET'); return send(res, 200, { v1: '/redfish/v1/' }); }
    if (path === '/redfish/v1') { only('GET'); return send(res, 200, serviceRoot()); }
    if (sessionService && path === '/redfish/v1/SessionService/Sessions' && method === 'POST') {
      const { UserName, Password } = body;
      if (typeof UserName !== 'string' || typeof Password !== 'string' || UserName !== opts.user || Password !== opts.password) {
        events.push(`login refused ${String(UserName)}`);
        throw errors.unauthorized(rawPath);
      }
      if (sessions.size >= maxSessions) {
        events.push(`login refused ${UserName} (session limit)`);
        throw errors.sessionLimit();
      }
      const s: Session = { id: String(nextSession++), token: randomBytes(16).toString('hex'), user: UserName };
      sessions.set(s.token, s);
      issued.push(s.token);
      logins++;
      events.push(`login ${UserName}`);
      if (sim.loginDelayMs) await new Promise((r) => setTimeout(r, sim.loginDelayMs));
      return send(res, 201, sessionResource(s), { 'X-Auth-Token': s.token, Location: `/redfish/v1/SessionService/Sessions/${s.id}` });
    }
    needAuth();
    if (sessionService && path === '/redfish/v1/SessionService') {
      only('GET');
      return send(res, 200, {
        '@odata.type': '#SessionService.v1_1_8.SessionService', '@odata.id': '/redfish/v1/SessionService', Id: 'SessionService',
        Name: 'Session Service', ServiceEnabled: true, SessionTimeout: 1800, Sessions: { '@odata.id': '/redfish/v1/SessionService/Sessions' },
      });
    }
    if (sessionService && path === '/redfish/v1/SessionService/Sessions') {
      only('GET, POST');
      const members = [...sessions.values()].map((s) => ({ '@odata.id': `/redfish/v1/SessionService/Sessions/${s.id}` }));
      return send(res, 200, {
        '@odata.type': '#SessionCollection.SessionCollection', '@odata.id': '/redfish/v1/SessionService/Sessions',
        Name: 'Session Collection', Members: members, 'Members@odata.count': members.length,
      });
    }
    const sessionMatch = sessionService ? /^\/redfish\/v1\/SessionService\/Sessions\/([^/]+)$/.exec(path) : null;
    if (sessionMatch) {
      only('GET, DELETE');
      const s = [...sessions.values()].find((x) => x.id === sessionMatch[1]);
      if (!s) throw errors.missing(rawPath);
      if (method === 'GET') return send(res, 200, sessionResource(s));
      sessions.delete(s.token);
      logouts++;
      events.push(`logout ${s.id}`);
      return send(res, 204);
    }
    if (path === '/redfish/v1/Systems') {
      only('GET');
      const members = [...systems.values()].map((s) => ({ '@odata.id': s.path }));
      return send(res, 200, {
        '@odata.type': '#ComputerSystemCollection.ComputerSystemCollection', '@odata.id': '/redfish/v1/Systems',
        Name: 'Computer System Collection', Members: members, 'Members@odata.count': members.length,
      });
    }
    const sys = /^\/redfish\/v1\/Systems\/([^/]+)(\/.*)?$/.exec(path);
    const s = sys ? systems.get(decodeURIComponent(sys[1]!)) : undefined;
    if (s && sys![2] === undefined) {
      only('GET, PATCH');
      if (method === 'PATCH') {
        if (sim.patchTasks) {
          const id = String(nextTask++);
          tasks.set(id, { done: () => patchSystem(s, req, body), what: 'boot task', ...sim.patchTasks, state: 'Running', messages: [] });
          events.push(`boot task ${id}`);
          return send(res, 202, taskResource(id), { Location: `${sim.url}/redfish/v1/TaskService/TaskMonitors/${id}` });
        }
        patchSystem(s, req, body);
        return send(res, 204, undefined, etags ? { ETag: etagOf(s) } : {});
      }
      return send(res, 200, systemResource(s), etags ? { ETag: etagOf(s) } : {});
    }
    if (s && sys![2] === '/Actions/ComputerSystem.Reset') {
      only('POST');
      if (sim.unauthorizedResets) throw errors.unauthorized(rawPath);
      if (sim.resetTasks) {
        const id = String(nextTask++);
        tasks.set(id, { done: () => reset(s, body), what: 'reset task', ...sim.resetTasks, state: 'Running', messages: [] });
        events.push(`reset task ${id} ${String(body.ResetType)}`);
        // Absolute, as iDRAC writes it: a client must take it on the BMC's own origin.
        return send(res, 202, taskResource(id), { Location: `${sim.url}/redfish/v1/TaskService/TaskMonitors/${id}` });
      }
      reset(s, body);
      return send(res, 204);
    }
    const monitor = /^\/redfish\/v1\/TaskService\/TaskMonitors\/([^/]+)$/.exec(path);
    const task = monitor ? tasks.get(monitor[1]!) : undefined;
    if (task) {
      only('GET');
      if (task.gave204) throw errors.missing(rawPath);
      if (task.state === 'Running' && task.polls-- > 0) return send(res, 202, taskResource(monitor![1]!));
      if (task.state === 'Running') {
        if (task.fail === null) {
          task.done();
          task.state = 'Completed';
        } else {
          task.state = 'Exception';
          task.messages = [message('GeneralError', task.fail)];
          events.push(`${task.what} ${monitor![1]} failed`);
        }
      }
      if (task.noContent) {
        task.gave204 = true;
        return send(res, 204);
      }
      return send(res, 200, taskResource(monitor![1]!));
    }
    const taskPath = /^\/redfish\/v1\/TaskService\/Tasks\/([^/]+)$/.exec(path);
    if (taskPath && tasks.has(taskPath[1]!)) {
      only('GET');
      return send(res, 200, taskResource(taskPath[1]!));
    }
    if (s && sys![2] === '/ResetActionInfo' && opts.actionInfo) {
      only('GET');
      return send(res, 200, {
        '@odata.type': '#ActionInfo.v1_3_0.ActionInfo', '@odata.id': `${s.path}/ResetActionInfo`, Id: 'ResetActionInfo', Name: 'Reset Action Info',
        Parameters: [{ Name: 'ResetType', Required: true, DataType: 'String', AllowableValues: resetTypes }],
      });
    }
    throw errors.missing(rawPath);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent || res.destroyed) return;
      if (err instanceof RedfishError) return sendError(res, err);
      sendError(res, new RedfishError(500, [message('InternalError', `The request failed due to an internal service error: ${(err as Error).message}`)]));
    });
  };
  const server: Server = tls ? createHttpsServer({ key, cert: certPem }, onRequest) : createHttpServer(onRequest);
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A client that gives up on a TLS handshake is no concern of the server's.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.address ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  const sim: RedfishSim = {
    url: `${tls ? 'https' : 'http'}://${opts.address === '::1' ? '[::1]' : '127.0.0.1'}:${port}`,
    port,
    certPem,
    certFile,
    system: (id) => {
      const s = id === undefined ? systems.values().next().value : systems.get(id);
      if (!s) throw new Error(`no simulated system ${id}`);
      return s;
    },
    setPower: (state, id) => {
      const s = sim.system(id);
      s.PowerState = state;
      changed(s);
    },
    events,
    requests,
    get logins() { return logins; },
    get logouts() { return logouts; },
    activeSessions: () => sessions.size,
    tokens: () => [...issued],
    expireSessions: () => { sessions.clear(); events.push('sessions expired'); },
    hang: false,
    refuseResets: null,
    unauthorizedResets: false,
    changeBeforeNextPatch: false,
    offBeforeNextReset: false,
    loginDelayMs: 0,
    resetTasks: null,
    patchTasks: null,
    held: () => heldResponses.size,
    stop: async () => {
      running.delete(sim);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  running.add(sim);
  return sim;
}

export async function stopAllRedfishSims(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()));
}
