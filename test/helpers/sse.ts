/**
 * A Server-Sent Events client for tests: node:http (so a test can stop reading, as a stuck
 * consumer does), each event parsed as the spec says (id, event, data lines; comments apart).
 */
import { request, IncomingMessage, ClientRequest } from 'node:http';
import { basic, Creds } from './server';
import { record } from './secrets';

export interface SseEvent { id: string; event: string; data: any }

export class SseStream {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  /** the id an EventSource would resume from: the last one of any block, with data or not (the spec's last event ID) */
  lastId?: string;
  status = 0;
  headers: IncomingMessage['headers'] = {};
  /** the body of a non-200 answer */
  body = '';
  /** resolves when the stream ends (the server closed it, or it broke) */
  readonly ended: Promise<void>;
  endedAt = 0;
  private req!: ClientRequest;
  res?: IncomingMessage;
  private buf = '';
  private waiters: (() => void)[] = [];

  /** light: keep of each event only its id, type and data.name (a long run's memory) */
  constructor(url: string, private readonly opts: { as?: Creds | null; lastEventId?: string; headers?: Record<string, string>; light?: boolean } = {}) {
    let done!: () => void;
    this.ended = new Promise((r) => (done = () => { this.endedAt = Date.now(); r(); this.wake(); }));
    const headers: Record<string, string> = { accept: 'text/event-stream', ...opts.headers };
    if (opts.as) headers.authorization = basic(opts.as);
    if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
    this.req = request(url, { headers });
    this.req.on('response', (res) => {
      this.res = res;
      this.status = res.statusCode ?? 0;
      this.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        record(chunk, 'an event stream');
        if (this.status !== 200) this.body += chunk;
        else this.parse(chunk);
      });
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
      this.wake();
    });
    this.req.on('error', done);
    this.req.end();
  }

  private parse(chunk: string): void {
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      const e: Partial<SseEvent> & { data?: string } = {};
      let data: string[] | undefined;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else if (line.startsWith('id: ')) e.id = line.slice(4);
        else if (line.startsWith('event: ')) e.event = line.slice(7);
        else if (line.startsWith('data: ')) (data ??= []).push(line.slice(6));
      }
      if (e.id !== undefined) this.lastId = e.id;
      if (!data) continue;
      const parsed = JSON.parse(data.join('\n'));
      // Copies, not slices: a slice would keep the whole chunk it came from alive.
      const own = (x: string) => Buffer.from(x).toString();
      this.events.push({ id: own(e.id!), event: own(e.event ?? 'message'), data: this.opts.light ? { name: parsed.name } : parsed });
    }
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Wait until `cond` holds (checked at each chunk); fails after `ms`. */
  async until(cond: () => boolean, ms = 10_000, what = 'the stream'): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      const left = end - Date.now();
      if (left <= 0) throw new Error(`${what}: condition not met in ${ms} ms (${this.events.length} events, status ${this.status})`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        this.waiters.push(() => { clearTimeout(t); r(); });
      });
    }
  }

  /** The answer's status (once the headers came). */
  async answered(ms = 10_000): Promise<number> {
    await this.until(() => this.status !== 0 || this.endedAt !== 0, ms, 'the answer');
    return this.status;
  }

  /** Wait for at least n events. */
  async count(n: number, ms = 10_000): Promise<SseEvent[]> {
    await this.until(() => this.events.length >= n, ms, `${n} events`);
    return this.events;
  }

  /** Stop reading (the socket's buffers fill up, as with a stuck consumer). */
  pause(): void {
    this.res?.pause();
  }

  /** Read again (what the socket's buffers held, then the end if the server closed it). */
  resume(): void {
    this.res?.resume();
  }

  close(): void {
    this.req.destroy();
  }
}
