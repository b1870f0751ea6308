/**
 * Moving from LMDB to PostgreSQL (actors/persistence/copy.ts): a service's LMDB store, copied
 * into an empty database, serves the same answers from PostgreSQL.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { must, makeNode, mockSwitch, startTestServer, stopTestServer } from '../../helpers/server';
import { keyFilePath } from '../../../src/secrets/at-rest';
import { freshDatabase } from '../../helpers/postgres';
import { Client } from 'pg';
import { scratchDir } from '../../helpers/scratch';
import { LmdbPersistenceEngine } from '../../../actors/persistence/lmdb';
import { migrateDatabase, PostgresPersistenceEngine } from '../../../actors/persistence/postgres';
import { copyStore } from '../../../actors/persistence/copy';
import type { PersistenceEngine } from '../../../actors/persistence/engine';

const COPY = join(__dirname, '..', '..', '..', 'actors', 'persistence', 'copy.js');
const copy = (...args: string[]) => spawnSync(process.execPath, [COPY, ...args], { encoding: 'utf8' });
/** The copy given its database in the environment, as the service reads it, not on its command line. */
const copyFromEnv = (dir: string, env: Record<string, string>) => spawnSync(process.execPath, [COPY, dir], { encoding: 'utf8', env: { ...process.env, ...env } });

describe('copying an LMDB store into PostgreSQL', () => {
  it('copies every event and snapshot: the service answers the same from PostgreSQL; a database with data is refused', async () => {
    const lmdb = await startTestServer({ storage: 'lmdb' });
    const api = lmdb.api;
    await must(api.put('/project/p'));
    await makeNode(api, 'n1', ['eth0', '__proto__']);
    await must(api.put('/switch/s', mockSwitch));
    await must(api.put('/switch/s/port/gi1/0/1'));
    await must(api.post('/switch/s/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    const done = async (r: Promise<{ body: { status_id: string } }>) => {
      const sid = (await r).body.status_id;
      for (const deadline = Date.now() + 10_000; (await api.get(`/networking_action/${sid}`)).body.status === 'PENDING' && Date.now() < deadline;) {
        await new Promise((res) => setTimeout(res, 10));
      }
      return sid;
    };
    // Enough events on the nic for snapshots (one every 16).
    for (let i = 0; i < 5; i++) {
      await done(must(api.post('/node/n1/nic/eth0/connect_network', { network: 'w' }), 202));
      await done(must(api.post('/node/n1/nic/eth0/detach_network', { network: 'w' }), 202));
    }
    const id = await done(must(api.post('/node/n1/nic/eth0/connect_network', { network: 'w' }), 202));
    const reads = ['/node/n1', '/projects', '/network/w', '/switch/s', `/networking_action/${id}`, '/node/n1/networking_actions', '/admin/actors/nic/n1/eth0/journal?limit=100', '/admin/actors/nic/n1/eth0'];
    const before = await Promise.all(reads.map(async (r) => (await must(api.get(r))).body));
    await stopTestServer(lmdb, false);

    const url = await freshDatabase();
    const out = copy(lmdb.dataDir, url);
    expect(out.status, out.stderr).to.equal(0);
    expect(out.stdout).to.match(/copied \d+ keys \(\d+ events, [1-9]\d* snapshots\)/);
    // The credentials came sealed: the service on the copy reads the same key (docs/identity.md).
    const pg = await startTestServer({ storage: 'postgres', databaseUrl: url, secretKeyFile: keyFilePath(lmdb.config) });
    const after = await Promise.all(reads.map(async (r) => (await must(pg.api.get(r))).body));
    // (whether the nic's actor is awake is not stored)
    for (const [i, r] of reads.entries()) expect({ ...after[i], live: undefined }, r).to.deep.equal({ ...before[i], live: undefined });
    await must(pg.api.put('/project/q'));

    // Not twice, nor into a database that has data.
    const again = copy(lmdb.dataDir, url);
    expect(again.status).to.equal(1);
    expect(again.stderr).to.match(/the target already holds hilt data/);
    expect(copy('/nonexistent', url).stderr).to.match(/is not an LMDB store/);
    await stopTestServer(pg);
  });

  it('refuses a folder a running service holds (the database left as it was), and copies it once the service stopped', async () => {
    const lmdb = await startTestServer({ storage: 'lmdb' });
    await must(lmdb.api.put('/project/p'));
    const url = await freshDatabase();
    const tables = async () => {
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        return Number((await c.query("SELECT count(*) AS n FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')")).rows[0].n);
      } finally {
        await c.end();
      }
    };
    const refused = copy(lmdb.dataDir, url);
    expect(refused.status, refused.stdout).to.equal(1);
    expect(refused.stderr).to.match(/hilt copy: the data folder .* is in use by another hilt process/);
    expect(await tables()).to.equal(0);
    // The service goes on serving, its lock still held.
    await must(lmdb.api.put('/project/q'));

    await stopTestServer(lmdb, false);
    // Its database from HILT_DATABASE_URL (no password on a command line every local user reads).
    const none = copyFromEnv(lmdb.dataDir, { HILT_DATABASE_URL: '' });
    expect(none.status).to.equal(1);
    expect(none.stderr).to.match(/usage: HILT_DATABASE_URL=/);
    expect(await tables()).to.equal(0);
    const out = copyFromEnv(lmdb.dataDir, { HILT_DATABASE_URL: url });
    expect(out.status, out.stderr).to.equal(0);
    expect(out.stdout).to.match(/copied \d+ keys/);
    // The copy let the folder go: a service starts on it again.
    const again = await startTestServer({ storage: 'lmdb' }, {}, lmdb.dataDir);
    await must(again.api.get('/project/q/nodes'));
    await stopTestServer(again);
  });

  it('keeps every event\'s position (the ids clients hold) and the marks: a store with gaps (retention) is not renumbered', async () => {
    const lmdb = new LmdbPersistenceEngine(scratchDir('hilt-copy-'));
    const ev = (key: string, seq: number, type = 'X') => ({ key, sequenceNumber: seq, data: { type }, tags: [], createdAt: 1000 + seq });
    await lmdb.persist([ev('node:a', 1)]);
    await lmdb.persist([ev('node:b', 1), ev('node:b', 2, 'NodeDeleted')]);
    await lmdb.persist([ev('node:c', 1)]);
    // Retention removes b's life: positions 2 and 3 are never given again.
    await lmdb.prune([{ key: 'node:b', upTo: 2 }]);
    await lmdb.persist([ev('node:a', 2)]);
    await lmdb.setMark('webhook:w1', { cursor: 4 });
    const feed = async (e: PersistenceEngine) => {
      const out: [string, number, number | undefined][] = [];
      for await (const x of e.feed(0)) out.push([x.key, x.sequenceNumber, x.position]);
      return out;
    };
    const before = await feed(lmdb);
    expect(before).to.deep.equal([['node:a', 1, 1], ['node:c', 1, 4], ['node:a', 2, 5]]);
    const url = await freshDatabase();
    await migrateDatabase({ url });
    const pg = new PostgresPersistenceEngine({ url });
    try {
      await copyStore(lmdb, pg);
      // A stream client's Last-Event-ID, a webhook receiver's X-Hilt-Event-Id: the same event after the move.
      expect(await feed(pg)).to.deep.equal(before);
      expect(await pg.bounds()).to.deep.equal(await lmdb.bounds());
      expect(await pg.mark('webhook:w1')).to.deep.equal({ cursor: 4 });
      // New events go on after every position the LMDB store gave.
      await pg.persist([ev('node:d', 1)]);
      expect((await feed(pg)).pop()).to.deep.equal(['node:d', 1, 6]);
    } finally {
      await pg.close();
      await lmdb.close();
    }
  });
});
