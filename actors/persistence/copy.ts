/**
 * Moving from LMDB to PostgreSQL (docs/high-availability.md): copy a stopped LMDB store into an
 * empty PostgreSQL database, once, before the first start on PostgreSQL.
 *
 *   HILT_DATABASE_URL=postgres://… node dist/actors/persistence/copy.js <LMDB folder>
 *   node dist/actors/persistence/copy.js <LMDB folder> <postgres://…>    (a command line every local user reads)
 *
 * Every event of every key (its sequence number, time, tags and data, the format record
 * `meta:format` included) at the position it has in the store's one commit order, each key's
 * latest snapshot and every mark (webhook cursors, retention's progress) are copied as they are,
 * and the database's positions go on after the store's last (retention's removals and a restore's
 * gap kept): the first start on PostgreSQL finds the data exactly as the last start on LMDB left
 * it, and an event id a stream client or a webhook receiver holds names the same event (renumbered,
 * a store with gaps would give its ids again to other events). The schema is
 * created first; a database that already holds hilt data is refused. Stop the service first:
 * the copy holds the folder's lock as a service does (src/folder-lock.ts), so a folder a running
 * hilt holds is refused (its writes during the copy would be missed, or torn across chunks).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LmdbPersistenceEngine } from './lmdb';
import { lockFolder } from '../../src/folder-lock';
import { migrateDatabase, PostgresPersistenceEngine } from './postgres';
import type { PersistedEvent } from './engine';

export interface CopySummary { keys: number; events: number; snapshots: number; marks: number; ms: number }

/** Events per write while copying (one transaction each). */
const CHUNK = 2000;

export async function copyStore(from: LmdbPersistenceEngine, to: PostgresPersistenceEngine, log: (line: string) => void = () => undefined): Promise<CopySummary> {
  for await (const key of to.keys('')) throw new Error(`the target already holds hilt data (e.g. ${key}); copy only into an empty database`);
  const started = Date.now();
  const summary: CopySummary = { keys: 0, events: 0, snapshots: 0, marks: 0, ms: 0 };
  let pending: PersistedEvent[] = [];
  const flush = async () => {
    if (pending.length) await to.importEvents(pending);
    pending = [];
  };
  for await (const e of from.feed(0)) {
    pending.push(e);
    if (++summary.events % 100_000 === 0) log(`${summary.events} events copied`);
    if (pending.length >= CHUNK) await flush();
  }
  await flush();
  await to.importBounds(await from.bounds());
  for (const [name, value] of from.marks()) {
    await to.setMark(name, value);
    summary.marks++;
  }
  for await (const key of from.keys('')) {
    const snap = await from.latestSnapshot(key);
    if (snap) {
      await to.takeSnapshot(snap);
      summary.snapshots++;
    }
    if (++summary.keys % 10_000 === 0) log(`${summary.keys} keys copied`);
  }
  summary.ms = Date.now() - started;
  return summary;
}

async function main(argv: string[]): Promise<void> {
  // The database from HILT_DATABASE_URL, as the service reads it, when not on the command line:
  // a command line (a password in it) is readable by every local user (ps) and kept in shells'
  // history. A password may also come in PGPASSWORD, which the PostgreSQL client reads.
  const [dir, url = process.env.HILT_DATABASE_URL] = argv;
  if (!dir || !url || !/^postgres(ql)?:\/\//.test(url) || argv.length > 2) {
    throw new Error('usage: HILT_DATABASE_URL=postgres://user@host:port/database node dist/actors/persistence/copy.js <LMDB folder> (or the URL as a second argument; a password in PGPASSWORD)');
  }
  if (!existsSync(join(dir, 'data.mdb'))) throw new Error(`${dir} is not an LMDB store (no data.mdb)`);
  // Before anything is written to the database: a refused copy leaves it as it was.
  const unlock = await lockFolder(dir);
  try {
    await migrateDatabase({ url });
    const from = new LmdbPersistenceEngine(dir);
    const to = new PostgresPersistenceEngine({ url, applicationName: 'hilt copy' });
    try {
      const s = await copyStore(from, to, (line) => process.stdout.write(`${line}\n`));
      process.stdout.write(`copied ${s.keys} keys (${s.events} events, ${s.snapshots} snapshots) in ${s.ms} ms\n`);
    } finally {
      await to.close();
      await from.close();
    }
  } finally {
    await unlock();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`hilt copy: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
