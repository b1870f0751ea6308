/**
 * The process under load: hilt (LMDB in a temp folder, logging off) and, on another port, a
 * bare fastify JSON route as the same-run baseline. Prints "ready <hiltPort> <barePort> <startMs>",
 * startMs being how long startService took (open storage, rebuild the read models, listen).
 * HILT_STORAGE=postgres with HILT_DATABASE_URL runs it on PostgreSQL instead; BENCH_DATA_DIR
 * names a data folder to use (and keep) instead of a new one. BENCH_OP_TRACE names a file: the
 * network operations' step trace (hardware/op-trace.ts) is kept and its figures written there at the stop.
 */
import Fastify from 'fastify';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config';
import { startService } from '../src/service';
import { operationTrace } from '../hardware/op-trace';

async function main(): Promise<void> {
  const keep = process.env.BENCH_DATA_DIR;
  const trace = process.env.BENCH_OP_TRACE;
  if (trace) operationTrace.enable();
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'hilt-bench-'));
  // HILT_* settings (e.g. mock switch delays, the engine) come from the environment, as in production.
  const started = performance.now();
  const svc = await startService({ ...loadConfig(), host: '127.0.0.1', port: 0, dataDir: dir, adminUser: 'admin', adminPassword: 'bench', logLevel: 'silent' });
  const startMs = Math.round(performance.now() - started);
  const bare = Fastify();
  bare.get('/bare', async () => ({ hello: 'world' }));
  // Same-shape baseline for writes: the identical PUT (path and JSON body), no work behind it.
  bare.put('/bare/node/:node', async () => ({}));
  // Reference only: the same bytes as listing 10,000 free nodes, with no work behind them.
  const listPayload = Buffer.from(JSON.stringify(Array.from({ length: Number(process.env.BENCH_NODES ?? 10_000) }, (_, i) => `n${i}`)));
  bare.get('/bare-list', async (_req, reply) => reply.type('application/json; charset=utf-8').send(listPayload));
  await bare.listen({ host: '127.0.0.1', port: 0 });
  const port = (u: string) => new URL(u).port;
  process.stdout.write(`ready ${port(svc.url)} ${(bare.server.address() as { port: number }).port} ${startMs}\n`);
  const stop = async () => {
    await bare.close();
    await svc.close();
    if (trace) writeFileSync(trace, JSON.stringify(operationTrace.figures()));
    if (!keep) rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
}

void main();
