/**
 * Serial consoles (docs/consoles.md): HIL v0.2's console calls, with the access control HIL
 * lacked, and the live console over a WebSocket.
 *
 * - `PUT /node/<node>/console` (start_console) starts recording; `DELETE` (stop_console) stops
 *   it and deletes the log; `GET` (show_console) answers the recorded text. Access as for power
 *   calls (docs/api-conventions.md §3): node 404 → a free node is the admin's, an assigned one its
 *   project's too (401) → an OBM without a console (Redfish) 409.
 * - `GET /node/<node>/console/stream`, a WebSocket: the recent log, then the live output, in
 *   binary messages; what the client sends goes to the node's serial input when
 *   HILT_CONSOLE_INPUT allows it. Connecting starts recording when it is off (for a caller who
 *   may start it), and is recorded in the audit log. The dashboard's console (src/routes/ui.ts)
 *   is the same stream behind its session cookie, which never starts the recording.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import * as S from '../schemas/consoles';
import { badArgument, conflict, forbidden, HiltError, notFound, unauthorized } from '../errors';
import { found, isMember, requireAdmin, requireProject, stillOn } from './guard';
import { driverName } from '../../actors/telemetry';
import { callerNow, expiryOf, type Caller } from '../auth/caller';
import type { NodeState } from '../../actors/node/protocol';
import type { Hilt } from '../app';
import { CLOSE, type Viewer } from '../../hardware/consoles';
import { onceAt } from '../../lib/time';

type N = { node: string };

/** The node of a console call, checked for the caller (see the file's comment). */
export function consoleTarget(hilt: Hilt, caller: Caller, name: string): NodeState {
  const node = found(hilt.world.rm.nodes.get(name), `node ${name}`);
  if (node.project) requireProject(caller, node.project);
  else requireAdmin(caller);
  if (!hilt.power.hasConsole(node.obm)) {
    throw conflict(`node ${name} has no serial console: its OBM type (${driverName(node.obm.type)}) offers none; consoles are IPMI Serial-over-LAN (docs/consoles.md)`);
  }
  return node;
}

/** The project a member acts through (null: an admin, or an auditor reading, who may act on any node), as the node actor checks it again. */
const through = (caller: Caller, node: NodeState) => (caller.isAdmin ? null : node.project);

/** May `c` (a caller's current rights) act on the node: its project's member, or an admin for any node? */
function mayAct(c: Caller | undefined, node: NodeState): c is Caller {
  if (!c) return false;
  return node.project ? isMember(c, node.project) : c.isAdmin;
}

/**
 * The live console is a read (a reader of the node's project, an auditor may watch it), except
 * what changes something: starting the recording and typing, which take a member's (or an
 * admin's) rights, as a change does (docs/identity.md).
 */
const mayChange = (hilt: Hilt, caller: Caller, node: NodeState): boolean => {
  const c = callerNow(hilt.world.rm, caller);
  return mayAct(c, node) && !c.readOnly;
};

/** May the viewer see the node's console now? (the same registration, still recorded, the caller's read rights as they are now) */
function maySee(hilt: Hilt, caller: Caller, node: NodeState): boolean {
  const now = hilt.world.rm.nodes.get(node.name);
  if (!now || now.incarnation !== node.incarnation || !now.console) return false;
  return mayAct(callerNow(hilt.world.rm, caller, true), now);
}

/**
 * Before the upgrade (`caller`: with a read's rights): the caller may see the node's console;
 * recording starts if it is off (a change: 403 for a caller who only reads; `mayStart: false`,
 * the dashboard's stream, never starts it: 403 too), a node with HILT_CONSOLE_VIEWERS viewers
 * already is refused (429, whoever the caller), and the attach is recorded (the node actor:
 * the audit log's `console_attach`). The node actor decides whether the console is recorded
 * when the attach's turn comes (a stop may be ahead of it in the mailbox): the check here only
 * refuses early what it would refuse.
 */
export async function prepareStream(hilt: Hilt, caller: Caller, name: string, opts: { mayStart?: boolean } = {}): Promise<NodeState> {
  const node = consoleTarget(hilt, caller, name);
  const mayStart = opts.mayStart !== false && mayChange(hilt, caller, node);
  if (!node.console && !mayStart) {
    throw forbidden(opts.mayStart === false
      ? `the console of node ${name} is not recorded: start its recording first (PUT /node/${name}/console)`
      : `read-only access to node ${name}: its console is not recorded, and starting it is a change`);
  }
  // Refused before the attach is recorded and before any log is read (the count holds at attach: serveStream).
  if (hilt.consoles.full(name)) throw new HiltError('TooManyRequestsError', hilt.consoles.tooMany(name));
  // Checked again in the node's turn: a start takes a change's rights still, a watch a read's.
  await hilt.world.nodes.ask(name, { type: 'node.attachConsole', by: caller.user, project: through(caller, node), mayStart }, {
    still: () => {
      if (mayStart ? !mayChange(hilt, caller, node) : !mayAct(callerNow(hilt.world.rm, caller, true), node)) {
        throw unauthorized(`the caller no longer has access to node ${name}`);
      }
    },
  });
  return hilt.world.rm.nodes.get(name) ?? node;
}

/**
 * Serves an upgraded connection as a viewer of the node's console. `stillValid`: more of what
 * must hold (the dashboard's session), checked with the access each time viewers are checked;
 * `endsAt`: when that ends by itself (the session's expiry).
 */
export function serveStream(hilt: Hilt, socket: WebSocket, caller: Caller, node: NodeState, stillValid: () => boolean = () => true, endsAt = Infinity): void {
  const { consoles, config } = hilt;
  const allowed = () => stillValid() && maySee(hilt, caller, node);
  const viewer: Viewer = {
    allowed,
    mayType: () => {
      if (config.consoleInput === 'none' || !allowed() || !mayChange(hilt, caller, node)) return false;
      return config.consoleInput === 'members' || !!callerNow(hilt.world.rm, caller)?.isAdmin;
    },
    send: (chunk) => {
      if (socket.readyState === socket.OPEN) socket.send(chunk, { binary: true });
    },
    backlog: () => socket.bufferedAmount,
    close: (code, reason) => socket.close(code, reason),
  };
  // Access lost while the connection was set up (a token revoked while the attach was recorded):
  // the viewers' check ran before this one was among them, so it is checked here, before any output.
  if (!allowed()) {
    socket.close(CLOSE.accessLost.code, CLOSE.accessLost.reason);
    return;
  }
  const attached = consoles.attach(node.name, viewer);
  if (attached === 'stopped') {
    socket.close(4410, 'the node\'s console is not recorded');
    return;
  }
  // Past the cap (others connected meanwhile): closed before anything is sent.
  if (attached === 'full') {
    socket.close(CLOSE.full.code, CLOSE.full.reason);
    return;
  }
  // A token's (or the session's) expiry ends the viewer then, not at the viewers' periodic check.
  const unarm = onceAt(Math.min(endsAt, expiryOf(hilt.world.rm, caller) ?? Infinity), () => consoles.recheck(node.name));
  let told = false;
  let toldFull = false;
  socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    const r = consoles.input(node.name, viewer, bytes);
    if (r === 'sent') toldFull = false;
    // Told once per run of refused input (a paste faster than the serial line takes it).
    if (r === 'full' && !toldFull) {
      toldFull = true;
      viewer.send(Buffer.from('\r\n[hilt] the node has not taken what was typed before: input dropped\r\n'));
    }
    if (r !== 'denied' || told) return;
    told = true;
    viewer.send(Buffer.from(`\r\n[hilt] what you type is not sent to the node (HILT_CONSOLE_INPUT=${config.consoleInput})\r\n`));
  });
  // A client gone without closing (a laptop shut, a link cut) is noticed by no write while the
  // node prints nothing: one that answered no ping since the last is disconnected.
  let answered = true;
  socket.on('pong', () => (answered = true));
  const pinger = setInterval(() => {
    if (!answered) return socket.terminate();
    answered = false;
    socket.ping();
  }, config.consolePingMs).unref();
  socket.on('close', () => {
    clearInterval(pinger);
    unarm();
    consoles.detach(node.name, viewer);
  });
}

/** A browser's page on another site must not reach the console with the user's cached credentials. */
function sameOriginOrNone(req: FastifyRequest): void {
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `${req.protocol}://${req.host}`) throw unauthorized('a console connection from another site\'s page is refused');
}

/** The node a stream's upgrade was prepared for. */
const streamNodes = new WeakMap<FastifyRequest, NodeState>();

export async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const hilt = app.hilt;
  const { world, consoles } = hilt;
  const rm = world.rm;

  app.get<{ Params: N }>('/node/:node/console', { schema: S.showConsole }, async (req, reply) => {
    const node = consoleTarget(hilt, req.caller, req.params.node);
    // HIL's answer when nothing is recorded.
    if (!node.console) throw notFound(`the console log for ${node.name}`);
    const log = await consoles.read(node.name);
    // What the node printed (a password prompt's neighbourhood, keys): kept in no cache.
    return reply.type('text/plain; charset=utf-8').header('cache-control', 'no-store').send(log ?? Buffer.alloc(0));
  });

  app.put<{ Params: N }>('/node/:node/console', { schema: S.startConsole }, async (req) => {
    const node = consoleTarget(hilt, req.caller, req.params.node);
    await world.nodes.ask(node.name, { type: 'node.startConsole', by: req.caller.user, project: through(req.caller, node) }, stillOn(rm, req.caller, node.project));
  });

  app.delete<{ Params: N }>('/node/:node/console', { schema: S.stopConsole }, async (req) => {
    const node = consoleTarget(hilt, req.caller, req.params.node);
    await world.nodes.ask(node.name, { type: 'node.stopConsole', by: req.caller.user, project: through(req.caller, node) }, stillOn(rm, req.caller, node.project));
    // The commit ended the session and queued the log's deletion: done before the answer.
    await consoles.forget(node.name);
  });

  app.route<{ Params: N }>({
    method: 'GET',
    url: '/node/:node/console/stream',
    schema: S.streamConsole,
    preHandler: async (req) => {
      // A plain GET is refused before anything is recorded.
      if (!req.ws) throw badArgument('GET /node/<node>/console/stream is a WebSocket: connect with "Connection: Upgrade" and "Upgrade: websocket"');
      sameOriginOrNone(req);
      streamNodes.set(req, await prepareStream(hilt, req.caller, req.params.node));
    },
    handler: async () => undefined,
    wsHandler: (socket: WebSocket, req: FastifyRequest) => {
      serveStream(hilt, socket, req.caller, streamNodes.get(req)!);
    },
  });
}
