/**
 * Opens the storage engine the configuration names (HILT_STORAGE): `lmdb`, the embedded
 * default, in the data folder; `memory`, for tests and demos, keeps nothing past the process;
 * `postgres`, a database shared by an active process and its standbys (HILT_DATABASE_URL).
 * The rest of the service sees only the PersistenceEngine contract, plus, for `postgres`, the
 * lease that decides which process is active (actors/persistence/lease.ts).
 */
import { LmdbPersistenceEngine } from './lmdb';
import { MemoryPersistenceEngine } from './memory';
import type { PostgresEngineOptions, PostgresSettings } from './postgres';
import type { LeaseCandidate } from './lease';
import type { PersistenceEngine } from './engine';
import type { MigrationResult } from './postgres-schema';
import { lazyModule } from '../../lib/lazy';

// PostgreSQL's engine and lease (and `pg` with them) load only where they are used: an LMDB
// start spent ~170 ms loading them (issue 27).
const postgres = lazyModule(() => require('./postgres') as typeof import('./postgres'));
const lease = lazyModule(() => require('./lease') as typeof import('./lease'));

export const STORAGE_ENGINES = ['lmdb', 'memory', 'postgres'] as const;
export type StorageKind = (typeof STORAGE_ENGINES)[number];

export interface StorageSettings {
  storage: StorageKind;
  /** the LMDB folder */
  dataDir: string;
  /** postgres: the database's URL */
  databaseUrl?: string;
  /** postgres: read connections per process */
  databasePoolSize?: number;
  /** postgres: the lease's TTL */
  leaseTtlMs?: number;
  /**
   * postgres: bound on each read and commit of the engine (default: the lease's TTL: a database
   * that cannot answer within it cannot keep this process active either)
   */
  databaseTimeoutMs?: number;
  /** postgres: this process's name in the lease and in pg_stat_activity */
  instanceName?: string;
  /** postgres, tests only: the lease never notices by itself that it was lost (LeaseOptions.selfCheck) */
  testFencingOnly?: boolean;
}

/** Whether this engine is shared by several processes, one of them active (a lease decides which). */
export const isShared = (settings: StorageSettings): boolean => settings.storage === 'postgres';

function postgresSettings(settings: StorageSettings): PostgresSettings {
  if (!settings.databaseUrl) throw new Error('HILT_STORAGE=postgres needs HILT_DATABASE_URL (postgres://user:password@host:port/database)');
  return {
    url: settings.databaseUrl, poolSize: settings.databasePoolSize, applicationName: `hilt ${settings.instanceName ?? ''}`.trim(),
    timeoutMs: settings.databaseTimeoutMs ?? settings.leaseTtlMs ?? 5000,
  };
}

/**
 * Prepare a shared store before anything else: create or migrate its schema. Returns what the
 * migration did (null for embedded engines).
 */
export async function prepareStorage(settings: StorageSettings): Promise<MigrationResult | null> {
  return isShared(settings) ? postgres().migrateDatabase(postgresSettings(settings)) : null;
}

/** The candidate for the lease of a shared store (null for embedded engines: the process is always active). */
export function leaseCandidate(settings: StorageSettings): LeaseCandidate | null {
  if (!isShared(settings)) return null;
  return new (lease().LeaseCandidate)(postgresSettings(settings), {
    ttlMs: settings.leaseTtlMs ?? 5000, holder: settings.instanceName ?? 'hilt', selfCheck: !settings.testFencingOnly,
  });
}

/** Open the engine; for a shared store, `fencing` names the lease's token every write must carry. */
export function openEngine(settings: StorageSettings, fencing: PostgresEngineOptions = {}): PersistenceEngine {
  switch (settings.storage) {
    case 'lmdb':
      try {
        return new LmdbPersistenceEngine(settings.dataDir);
      } catch (err) {
        // LMDB's own words name neither the folder nor the usual cause: a store first made by another user (root).
        throw new Error(`cannot open the LMDB store in ${settings.dataDir} (HILT_DATA_DIR): ${(err as Error).message}; its data.mdb and lock.mdb must be files this process's user may read and write`);
      }
    case 'memory':
      return new MemoryPersistenceEngine();
    case 'postgres':
      return new (postgres().PostgresPersistenceEngine)(postgresSettings(settings), fencing);
  }
}

export type { PersistenceEngine } from './engine';
export { SchemaTooNewError } from './postgres-schema';
export type { HeldLease, LeaseCandidate } from './lease';
