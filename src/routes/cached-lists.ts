/**
 * JSON lists served from a cache that lives until the read model's version changes.
 * Large answers are also kept gzipped, built once per change, never per request.
 */
import { gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Below this size compression is not worth a header. */
const GZIP_MIN_BYTES = 4096;

/** Does an Accept-Encoding header accept gzip? Listed, and not with q=0 (RFC 9110 §12.5.3). */
function acceptsGzip(header: string | undefined): boolean {
  const m = /(?:^|,)\s*(?:x-)?gzip\s*(;[^,]*)?(?:,|$)/i.exec(header ?? '');
  return !!m && !/;\s*q\s*=\s*0(?:\.0*)?\s*$/i.test(m[1] ?? '');
}

interface Entry { json: Buffer; gzip?: Buffer }

export class CachedLists<K extends string> {
  private version = -1;
  private entries = new Map<K, Entry>();

  constructor(private readonly currentVersion: () => number, private readonly build: () => Record<K, unknown>) {}

  send(key: K, req: FastifyRequest, reply: FastifyReply): FastifyReply {
    const entry = this.entry(key);
    reply.type('application/json; charset=utf-8').header('vary', 'accept-encoding');
    if (entry.json.length >= GZIP_MIN_BYTES && acceptsGzip(req.headers['accept-encoding'])) {
      entry.gzip ??= gzipSync(entry.json, { level: 6 });
      return reply.header('content-encoding', 'gzip').send(entry.gzip);
    }
    return reply.send(entry.json);
  }

  private entry(key: K): Entry {
    const v = this.currentVersion();
    if (v !== this.version) {
      this.entries = new Map();
      for (const [k, value] of Object.entries(this.build()) as [K, unknown][]) this.entries.set(k, { json: Buffer.from(JSON.stringify(value)) });
      this.version = v;
    }
    return this.entries.get(key)!;
  }
}
