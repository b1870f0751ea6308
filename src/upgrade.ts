/**
 * Requests to switch protocols, as the Gate hands them on (node gives such a request's socket
 * to an 'upgrade' listener, not to the request handler). A WebSocket route's go to
 * @fastify/websocket, which listens on the app's server; any other is answered by the app as
 * plain HTTP on its socket (a server may ignore Upgrade), which is then closed: the plugin's hooks
 * that did this for every route run on the WebSocket routes only (src/app.ts).
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Requests to switch protocols that carried a body, which node did not read: the app refuses them. */
export const bodiesLost = new WeakSet<IncomingMessage>();
export const BODY_LOST_MSG = 'a request that asks to switch protocols (Upgrade) cannot carry a body here: send it without the Upgrade header';

export function upgradeHandler(app: FastifyInstance, handler: Handler) {
  const server = app.server;
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Only a GET with a well-formed path opens a WebSocket: the plugin's answer to another method
    // (404) or to a path that is not valid percent-encoding (400) would leave the socket open,
    // unparsed and unanswered for good; answered here, the socket is closed after it.
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && app.isWebSocketPath(path) && decodes(path)) return void server.emit('upgrade', req, socket, head);
    // node removed its own error listener before handing the socket over
    socket.on('error', () => socket.destroy());
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.once('finish', () => socket.destroy());
    // node has stopped parsing this request: its body would never reach the call, which would
    // then run without it (or refuse a length that does not match). The app refuses it before
    // any call runs (src/app.ts), so that the 400 is counted and logged as any answer; told that
    // there is no body, it waits for none.
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) {
      bodiesLost.add(req);
      req.headers['content-length'] = '0';
      delete req.headers['transfer-encoding'];
    }
    handler(req, res);
  };
}

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
