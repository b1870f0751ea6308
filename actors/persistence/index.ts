/**
 * Opens the storage engine the configuration names (HILT_STORAGE): `lmdb`, the embedded
 * default, in the data folder; `memory`, for tests and demos, keeps nothing past the process.
 * The rest of the service sees only the PersistenceEngine contract.
 */
import { LmdbPersistenceEngine } from './lmdb';
import { MemoryPersistenceEngine } from './memory';
import type { PersistenceEngine } from './engine';

export const STORAGE_ENGINES = ['lmdb', 'memory'] as const;
export type StorageKind = (typeof STORAGE_ENGINES)[number];

export interface StorageSettings {
  storage: StorageKind;
  /** the LMDB folder */
  dataDir: string;
}

export function openEngine(settings: StorageSettings): PersistenceEngine {
  switch (settings.storage) {
    case 'lmdb':
      return new LmdbPersistenceEngine(settings.dataDir);
    case 'memory':
      return new MemoryPersistenceEngine();
  }
}

export type { PersistenceEngine } from './engine';
