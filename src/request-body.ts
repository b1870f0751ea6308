/**
 * What the API takes from a client before any route sees it: the body is JSON whatever the
 * Content-Type, one JSON object, each key once (docs/api-conventions.md §2); a GET carries
 * none; and what node's HTTP parser refuses is answered with the API's error body.
 */
import type { FastifyRequest } from 'fastify';
import { badArgument } from './errors';
import { quote } from '../lib/text';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The first key that an object of `text` (valid JSON) holds twice, or null. JSON.parse keeps the
 * last of them silently; a body that says two things is refused instead (docs/api-conventions.md
 * §2), so that no two readers of one body (a proxy, an audit, hilt) can disagree about it.
 */
export function duplicateKey(text: string): string | null {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c /* \ */ ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        // Without an escape the characters between the quotes are the key (valid JSON: no control characters).
        const raw = text.slice(i + 1, j);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, j + 1)) as string) : raw;
        if (top.has(key)) return key;
        top.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */) {
      stack.push(new Set());
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      stack.push(null);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      expectKey = stack[stack.length - 1] != null;
    }
  }
  return null;
}

/** Bodies are JSON whatever the Content-Type (HIL's client sends none); empty means {}. */
export function parseJsonObject(_req: FastifyRequest, raw: Buffer, done: (err: Error | null, body?: unknown) => void): void {
  if (raw.length === 0) return done(null, {});
  let value: unknown;
  let text: string;
  try {
    text = utf8.decode(raw);
    value = JSON.parse(text);
  } catch {
    return done(badArgument('the request body is not valid UTF-8 JSON'));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return done(badArgument('the request body must be a JSON object'));
  const twice = duplicateKey(text);
  if (twice !== null) return done(badArgument(`the request body has the key ${quote(twice)} more than once`));
  if (UNSTORABLE_ESCAPE.test(text) && holdsUnstorable(value)) {
    return done(badArgument('the request body holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair) or a NUL (\\u0000): it could not be stored as given'));
  }
  done(null, value);
}

/** What a lone surrogate or a NUL in a valid UTF-8 JSON body must have been written as (a cheap first look). */
const UNSTORABLE_ESCAPE = /\\u(?:[dD][89a-fA-F]|0000)/;
const UNSTORABLE = /[\p{Cs}\u0000]/u;

/**
 * Whether a key or string of a parsed body holds a lone surrogate or a NUL. A lone surrogate has
 * no UTF-8 form, so storage would keep U+FFFD instead (LMDB) or refuse the change (PostgreSQL's
 * json); PostgreSQL refuses a NUL too (a 503 for a client's odd input), so both engines refuse
 * both. Without recursion: bodies may nest deeper than the stack.
 */
function holdsUnstorable(value: object): boolean {
  const todo: unknown[] = [value];
  while (todo.length) {
    const v = todo.pop();
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) return true;
    } else if (Array.isArray(v)) {
      for (const x of v) todo.push(x);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (UNSTORABLE.test(k)) return true;
        todo.push(x);
      }
    }
  }
  return false;
}

/** A GET must not carry a body (docs/api-conventions.md §2); fastify does not read GET bodies, so look. */
export async function rejectGetBody(req: FastifyRequest): Promise<void> {
  const len = req.headers['content-length'];
  if (len !== undefined && len !== '0') throw badArgument('a GET request must not have a body');
  if (req.headers['transfer-encoding']) {
    for await (const chunk of req.raw) if ((chunk as Buffer).length) throw badArgument('a GET request must not have a body');
  }
}

/**
 * What node's HTTP parser refuses, answered with the error body (or nothing, when the socket
 * cannot take it). Returns what was answered: the status, and the request's method when its
 * headers had arrived (a body too slow); undefined when the connection was cut unanswered.
 */
export function clientError(err: Error & { code?: string }, socket: import('node:net').Socket): { status: number; method?: string } | undefined {
  // A request before the bad one is still being answered (pipelining): an answer written now
  // would be read as that request's, which may have changed something. The client sees the
  // connection cut instead, and no answer for what it sent. The answer in flight may be the bad
  // request's own, its body still arriving (too slowly, or malformed): no call runs before its
  // body is whole, so while nothing of that answer is written, this one is its answer.
  const inFlight = (socket as { _httpMessage?: { headersSent: boolean; req?: { complete: boolean; method?: string } } })._httpMessage;
  const answering = inFlight != null && (inFlight.headersSent || inFlight.req?.complete !== false);
  if (!socket.writable || err.code === 'ECONNRESET' || answering) {
    socket.destroy();
    return undefined;
  }
  const [status, type, msg] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'BadArgumentError', 'the request headers are too large']
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'BadArgumentError', 'the request took too long to arrive']
      : [400, 'BadArgumentError', 'malformed HTTP request'];
  const body = JSON.stringify({ type, msg });
  socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  return { status, method: inFlight?.req?.method };
}

/** The largest body the API reads. */
export const BODY_LIMIT = 1024 * 1024;
/** What the rest of a body over the limit may be before the connection is cut without an answer. */
const DRAIN_MAX_BYTES = 64 * BODY_LIMIT;
const DRAIN_MAX_MS = 30_000;

/**
 * The rest of a body over the limit, read and dropped: a client still sending it reads the 413
 * once it is done (answering at once and closing, as fastify does, cuts it off mid-send with a
 * broken pipe before it reads anything). A body past DRAIN_MAX_BYTES, or one that does not end
 * within DRAIN_MAX_MS, gets the connection cut.
 */
export function drained(req: import('node:http').IncomingMessage): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let bytes = 0;
    const cut = () => {
      req.socket.destroy();
      done();
    };
    const timer = setTimeout(cut, DRAIN_MAX_MS);
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > DRAIN_MAX_BYTES) cut();
    };
    function done() {
      clearTimeout(timer);
      req.off('data', onData).off('end', done).off('close', done).off('error', done);
      resolve();
    }
    req.on('data', onData).on('end', done).on('close', done).on('error', done);
    req.resume();
  });
}
