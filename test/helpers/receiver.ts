/** A local webhook receiver (127.0.0.1, port 0) that records every POST and answers as a test tells it. */
import { createServer, IncomingMessage, Server } from 'node:http';

export interface Received { body: string; json: any; headers: IncomingMessage['headers']; status: number; at: number }

export class Receiver {
  readonly requests: Received[] = [];
  /** the status of each next answer (default 200); `hang` never answers */
  answer: (r: Omit<Received, 'status'>, n: number) => number | 'hang' = () => 200;
  /** ms before answering */
  delayMs = 0;
  url = '';
  private server!: Server;
  private readonly hanging = new Set<() => void>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const r = { body, json, headers: req.headers, at: Date.now() };
        const status = this.answer(r, this.requests.length);
        const reply = () => {
          this.requests.push({ ...r, status: status === 'hang' ? 0 : status });
          if (status === 'hang') {
            this.hanging.add(() => res.destroy());
            return;
          }
          res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
        };
        if (this.delayMs) setTimeout(reply, this.delayMs);
        else reply();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/hook`;
    return this;
  }

  /** Event ids of the answers with a 2xx, in the order they came. */
  delivered(): string[] {
    return this.requests.filter((r) => r.status >= 200 && r.status < 300).map((r) => r.json.id);
  }

  async until(cond: () => boolean, ms = 20_000, what = 'the receiver'): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`${what}: not met in ${ms} ms (${this.requests.length} requests)`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    for (const h of this.hanging) h();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
