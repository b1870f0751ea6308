/**
 * Credentials at rest (docs/identity.md): the key, its record in the store, the sealing of
 * driver secrets, the upgrade of credentials an earlier release stored in plain text, and the
 * rotation to a new key while the service runs.
 *
 * - The key is 32 random bytes in HILT_SECRET_KEY_FILE (default `<data folder>/secret.key`),
 *   made 0600 at the first start when the store has no credential under any key yet. It is never
 *   in the store, so never in a backup.
 * - The store records the id of the key its credentials are under (`meta:secret-key`). A start
 *   with another key, or without the file, refuses with a message naming both ids: a wrong key
 *   would never open a value anyway (AES-GCM authenticates), but it is said at once, not at the
 *   first power call.
 * - The first start of this release on a store seals every plaintext credential in place
 *   (events and snapshots, old formats included, through the engine's rewrite), then has the
 *   engine compact its files so that no freed page keeps a copy, and logs how many.
 * - A rotation records where both keys are before it starts, seals with the new key from then
 *   on, re-encodes every node and switch in its actor's mailbox (no event slips in under the old
 *   key), records the new key, and installs it (the key read when it began) as
 *   HILT_SECRET_KEY_FILE. Interrupted, the next start reads both files from the record and
 *   finishes it; it refuses when the new key is in none of them.
 */
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { fsyncPath } from '../../lib/durable';
import { dirname, join } from 'node:path';
import { HiltError } from '../errors';
import { isSealed, keyId, Keyring, newKeyText, parseKey, type Sealed } from '../../lib/sealed';
import { CREDENTIAL_KINDS, mapStoredFields, type CredentialKind, type Credentials, type Fields, type SealKind } from '../../actors/credentials';
import type { PersistenceEngine, Rewrite } from '../../actors/persistence/engine';
import type { Reencode } from '../../actors/runtime';
import type { World } from '../../actors/world';
import type { Drivers } from '../drivers';

const RECORD_KEY = 'meta:secret-key';

type KeyRecord =
  | { type: 'SecretKeyInUse'; kid: string }
  | { type: 'SecretKeyRotating'; from: string; to: string; fromFile: string; toFile: string };

interface Log { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void }

/** Where the key is: HILT_SECRET_KEY_FILE, or the data folder's secret.key. */
export const keyFilePath = (c: { secretKeyFile?: string; dataDir: string }): string => c.secretKeyFile ?? join(c.dataDir, 'secret.key');

/** A key file's key, or a start-stopping error that says what is wrong with it. */
export function readKeyFile(file: string): Buffer {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the secret key file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const key = parseKey(text);
  if (!key) throw new Error(`the secret key file ${file} does not hold a key: it must be 32 random bytes in base64 (openssl rand -base64 32) or hex`);
  return key;
}

/**
 * Write a key file as the service's alone (0600), atomically: a temporary file renamed over it.
 * Durably (the file, then its folder, fsynced): the store's record of the key is durable, and
 * after a power loss the key it names must still be there to open the credentials.
 */
function writeKeyFile(file: string, text: string): void {
  const tmp = join(dirname(file), `.${Date.now()}.secret.key.tmp`);
  writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
  fsyncPath(tmp);
  renameSync(tmp, file);
  fsyncPath(dirname(file));
}

async function lastRecord(engine: PersistenceEngine): Promise<{ record?: KeyRecord; seq: number }> {
  for await (const e of engine.journal(RECORD_KEY, 1)) return { record: e.data as KeyRecord, seq: e.sequenceNumber };
  return { seq: 0 };
}

async function writeRecord(engine: PersistenceEngine, record: KeyRecord): Promise<void> {
  const at = Date.now();
  const { seq } = await lastRecord(engine);
  await engine.persist([{ key: RECORD_KEY, sequenceNumber: seq + 1, tags: [], createdAt: at, data: { ...record, by: 'secrets', at } }]);
}

export interface ResealCount { sealed: number; resealed: number; values: number }

/**
 * The service's credentials: seals with the current key, opens with any key held. One per
 * activation, made by open() before the actors exist.
 */
export class SecretStore implements Credentials {
  private rotating = false;

  private constructor(
    private readonly keyring: Keyring,
    private readonly file: string,
    private readonly drivers: Drivers,
    private readonly engine: PersistenceEngine,
    private readonly log: Log,
    private record: KeyRecord | undefined,
    /** a rotation's new key, as read and checked: what finishing it installs (never its file read again) */
    private newKey?: Buffer,
  ) {}

  /** The key id credentials are sealed under now. */
  get keyId(): string {
    return this.keyring.current;
  }

  /**
   * Load the key (made at the first start) and check it against the store's record. Throws,
   * stopping the start, when the key is missing or is not the store's.
   */
  static async open(engine: PersistenceEngine, config: { secretKeyFile?: string; dataDir: string }, drivers: Drivers, log: Log): Promise<SecretStore> {
    const file = keyFilePath(config);
    const { record } = await lastRecord(engine);
    if (!existsSync(file)) {
      if (record) {
        const kid = record.type === 'SecretKeyInUse' ? record.kid : record.to;
        throw new Error(`the secret key file ${file} (HILT_SECRET_KEY_FILE) is missing: the stored credentials are encrypted under key ${kid}. Restore that key file (backups never hold it); a new key cannot open them`);
      }
      writeKeyFile(file, newKeyText());
      log.warn({ keyFile: file }, 'made a new secret key for the credentials at rest: keep a copy of this file apart from the backups (docs/identity.md)');
    }
    if (statSync(file).mode & 0o077) log.warn({ keyFile: file }, 'the secret key file can be read by other users than the service\'s: chmod 600 it');
    const configured = readKeyFile(file);
    const keyring = new Keyring(configured);
    if (record?.type === 'SecretKeyInUse' && record.kid !== keyring.current) {
      throw new Error(`the secret key in ${file} (key ${keyring.current}) is not the key the stored credentials are encrypted under (key ${record.kid}): refusing to start rather than send a wrong password to a BMC or switch. Set HILT_SECRET_KEY_FILE to the file of key ${record.kid}`);
    }
    let newKey: Buffer | undefined;
    if (record?.type === 'SecretKeyRotating') {
      // Interrupted: both keys, from the files the record names; prepare() finishes it.
      if (keyring.current !== record.from && keyring.current !== record.to) {
        throw new Error(`the secret key in ${file} (key ${keyring.current}) is neither key of the interrupted rotation from ${record.from} to ${record.to}`);
      }
      const keys = [configured];
      for (const other of [record.fromFile, record.toFile]) {
        let key: Buffer;
        try {
          key = readKeyFile(other);
        } catch (err) {
          // A backup taken while a rotation ran, restored after its files moved on, lands here.
          throw new Error(`${(err as Error).message}: the store's credentials are in a key rotation from key ${record.from} to key ${record.to}, some under each; put the files of both keys back at ${record.fromFile} and ${record.toFile} (the start finishes the rotation)`);
        }
        if (keyId(key) !== record.from && keyId(key) !== record.to) throw new Error(`the key file ${other} of the interrupted key rotation no longer holds its key`);
        keyring.add(key);
        keys.push(key);
      }
      newKey = keys.find((k) => keyId(k) === record.to);
      // Some credentials are already under the new key: without it they would not open.
      if (!newKey) {
        throw new Error(`the new key ${record.to} of the interrupted key rotation is in none of its files: ${record.toFile} holds another key. Put the file of key ${record.to} back at ${record.toFile}; credentials are already encrypted under it`);
      }
      keyring.use(record.to);
    }
    return new SecretStore(keyring, file, drivers, engine, log, record, newKey);
  }

  /**
   * Before the read models are built: finish an interrupted rotation, or (no record yet: the
   * first start of this release on the store) seal every plaintext credential, compact the
   * store, and record the key.
   */
  async prepare(): Promise<void> {
    const r = this.record;
    if (r?.type === 'SecretKeyInUse') return;
    const count = await this.resealStored();
    if (r?.type === 'SecretKeyRotating') {
      await this.finishRotation(r);
      this.log.warn({ from: r.from, to: r.to, ...count }, 'finished a key rotation that was interrupted');
      return;
    }
    if (count.sealed) {
      // Freed pages of the store's files still hold the plaintext until compacted. A compaction
      // that fails does not stop the start (the credentials are sealed; the next start would find
      // nothing to seal, so it would not compact again): the log says so and what to do.
      await this.engine.compact().catch((err: Error) => this.log.error({ err: err.message, sealed: count.sealed },
        'the store could not be compacted after sealing the plaintext credentials: its freed space may still hold copies of them; compact it by hand (docs/identity.md)'));
      this.log.warn({ ...count, keyId: this.keyring.current }, `encrypted ${count.sealed} credentials that an earlier release stored in plain text, rewriting ${count.values} stored events and snapshots; no plaintext copy remains in the store`);
    }
    await this.setRecord({ type: 'SecretKeyInUse', kid: this.keyring.current });
  }

  private async setRecord(record: KeyRecord): Promise<void> {
    await writeRecord(this.engine, record);
    this.record = record;
  }

  seal(kind: SealKind, type: string, fields: Fields): Fields {
    return this.mapFields(kind, type, fields).fields;
  }

  open(fields: Fields): Fields {
    let out: Fields | undefined;
    for (const [k, v] of Object.entries(fields)) {
      if (!isSealed(v)) continue;
      out ??= { ...fields };
      out[k] = this.keyring.open(v);
    }
    return out ?? fields;
  }

  /** Fields with every secret sealed under the current key; `fields` itself when nothing changed. */
  private mapFields(kind: SealKind, type: string, fields: Fields, count?: ResealCount): { fields: Fields } {
    // A webhook's one secret is its signing key (src/events/webhooks.ts); a driver says which of its fields are.
    const secret = new Set(kind === 'webhook' ? ['secret'] : (kind === 'obm' ? this.drivers.obm : this.drivers.switches).registry.secretFields(type, fields));
    let out: Fields | undefined;
    for (const [k, v] of Object.entries(fields)) {
      let next: unknown = v;
      if (isSealed(v)) {
        next = this.keyring.reseal(v);
        if (next !== v && count) count.resealed++;
      } else if (typeof v === 'string' && secret.has(k)) {
        next = this.keyring.seal(v);
        if (count) count.sealed++;
      }
      if (next !== v) (out ??= { ...fields })[k] = next as Sealed;
    }
    return { fields: out ?? fields };
  }

  private reencoder(kind: CredentialKind, count: ResealCount): Reencode {
    const f = (driver: SealKind, type: string, fields: Fields) => this.mapFields(driver, type, fields, count).fields;
    return { event: (d) => mapStoredFields(kind, d, false, f), state: (d) => mapStoredFields(kind, d, true, f) };
  }

  /** Every node's and switch's stored credentials under the current key, straight in the store (nothing else runs). */
  private async resealStored(): Promise<ResealCount> {
    const count: ResealCount = { sealed: 0, resealed: 0, values: 0 };
    for (const kind of CREDENTIAL_KINDS) {
      const r = this.reencoder(kind, count);
      for await (const key of this.engine.keys(`${kind}:`)) {
        const changes: Rewrite = { events: [], snapshots: [] };
        for await (const e of this.engine.events(key)) {
          const data = r.event(e.data);
          if (data !== e.data) changes.events.push({ key, sequenceNumber: e.sequenceNumber, data });
        }
        const snap = await this.engine.latestSnapshot(key);
        const data = snap && r.state(snap.data);
        if (snap && data !== snap.data) changes.snapshots.push({ key, sequenceNumber: snap.sequenceNumber, data });
        if (changes.events.length || changes.snapshots.length) await this.engine.rewrite(changes);
        count.values += changes.events.length + changes.snapshots.length;
      }
    }
    return count;
  }

  /** Record the new key, forget the old, and install the new key as the configured file (false: it could not be written). */
  private async finishRotation(r: Extract<KeyRecord, { type: 'SecretKeyRotating' }>): Promise<boolean> {
    await this.setRecord({ type: 'SecretKeyInUse', kid: r.to });
    this.keyring.drop(r.from);
    if (readKeyIdOr(this.file) === r.to) return true;
    try {
      // From now on a start reads the new key from the configured file: the key checked when the
      // rotation began, not what its file holds by now (it may have been replaced meanwhile).
      if (!this.newKey || keyId(this.newKey) !== r.to) throw new Error(`key ${r.to} is not held`);
      writeKeyFile(this.file, `${this.newKey.toString('base64')}\n`);
      return true;
    } catch (err) {
      this.log.warn({ keyFile: this.file, newKeyFile: r.toFile, err: (err as Error).message }, 'could not install the new secret key as the key file: install it by hand (or point HILT_SECRET_KEY_FILE to it) before the next start');
      return false;
    }
  }

  /**
   * Re-encrypt every credential under the key in `newFile` while the service runs (POST
   * /admin/secret-key/rotate). Each node and switch is re-encoded in its actor's turn; calls go
   * on. A rotation that failed midway is run again with the same file.
   */
  async rotate(world: World, newFile: string): Promise<{ from: string; to: string; values: number; keyFile: string; installed: boolean }> {
    if (this.rotating) throw new HiltError('IllegalStateError', 'a key rotation is already running');
    let key: Buffer;
    try {
      key = readKeyFile(newFile);
    } catch (err) {
      throw new HiltError('BadArgumentError', (err as Error).message);
    }
    const to = keyId(key);
    const pending = this.record?.type === 'SecretKeyRotating' ? this.record : undefined;
    if (pending && pending.to !== to) throw new HiltError('IllegalStateError', `a rotation to key ${pending.to} (${pending.toFile}) did not finish: run it again with that file`);
    if (!pending && to === this.keyring.current) throw new HiltError('IllegalStateError', `the credentials are already under key ${to}`);
    this.rotating = true;
    try {
      const record = pending ? { ...pending, toFile: newFile } : { type: 'SecretKeyRotating' as const, from: this.keyring.current, to, fromFile: this.file, toFile: newFile };
      // Recorded first: a start after a crash knows both files and finishes the rotation (again
      // when run with another file of the same key: the first may no longer hold it).
      if (!pending || pending.toFile !== newFile) await this.setRecord(record);
      this.keyring.add(key);
      this.keyring.use(to);
      this.newKey = key;
      const count: ResealCount = { sealed: 0, resealed: 0, values: 0 };
      // Again until a pass finds nothing under the old key: a call that sealed its credential
      // just before the switch of keys may commit after its object's rewrite, or create an
      // object the pass's list of keys did not have yet.
      // Every kind that holds credentials: one left out keeps values under a key the rotation then drops.
      const registries: Record<CredentialKind, Pick<World['nodes'], 'storedIds' | 'liveActors'> & { rewrite(id: string, r: Reencode): Promise<number> }> = {
        node: world.nodes, switch: world.switches, webhook: world.webhooks,
      };
      let before: number;
      do {
        before = count.resealed;
        for (const kind of CREDENTIAL_KINDS) {
          const reg = registries[kind];
          const r = this.reencoder(kind, count);
          // The live actors too, listed before the store's keys: one that sealed a value under the
          // old key may not have committed it yet (a first registration is in no list of keys
          // until then). Its rewrite waits in its mailbox behind that command, so it finds the
          // value stored; an actor that stopped meanwhile had committed, so the store lists it.
          const live = reg.liveActors().map((a) => a.id);
          for (const id of new Set([...live, ...(await reg.storedIds())])) count.values += await reg.rewrite(id, r);
        }
      } while (count.resealed > before);
      const installed = await this.finishRotation(record);
      this.log.warn({ from: record.from, to, values: count.values, keyFile: this.file, installed }, 'rotated the secret key: every credential is now under the new key');
      return { from: record.from, to, values: count.values, keyFile: this.file, installed };
    } finally {
      this.rotating = false;
    }
  }
}

function readKeyIdOr(file: string): string | null {
  try {
    return keyId(readKeyFile(file));
  } catch {
    return null;
  }
}
