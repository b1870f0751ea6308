/**
 * Where a headnode's files live and what its host devices are called. Every name derives from
 * the state folder and the headnode's name: a new driver instance (after a restart of the
 * service) finds the VMs of an earlier one, and deployments sharing a host never collide.
 */
import { createHash } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';

import { HeadnodeError } from '../types';

/** Longest unix socket path (sun_path is 108 bytes including the NUL). */
const SUN_PATH_MAX = 107;

export function sha256(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex');
}

/**
 * Hex digits of sha256(name) in the names of a headnode's files and QMP socket: 128 bits.
 * Headnode names are chosen by tenants and global, so two names sharing a file name must be
 * out of reach of a search for a collision, not merely unlikely by chance.
 */
const HASH_HEX = 32;
/** What earlier releases used (40 bits): see QemuLayout.legacy. */
const LEGACY_HASH_HEX = 10;

/** The first `digits` base-32 digits (RFC 4648's alphabet, lower case: valid in interface names) of `bytes`. */
export function base32(bytes: Buffer, digits: number): string {
  const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = '';
  for (let bit = 0; out.length < digits; bit += 5) {
    const i = bit >> 3;
    const word = ((bytes[i] << 8) | (bytes[i + 1] ?? 0)) >> (11 - (bit & 7));
    out += ALPHABET[word & 31];
  }
  return out;
}

export class QemuLayout {
  /** folder of the QMP sockets (sun_path limits their paths to 107 bytes) */
  readonly socketDir: string;

  constructor(readonly stateDir: string) {
    // QMP sockets live with the state unless that path is too long for a unix socket; then in
    // a private folder of the system's temp dir, named after the state dir (stable across restarts).
    const fits = (dir: string) => path.join(dir, `${'x'.repeat(HASH_HEX)}.qmp`).length <= SUN_PATH_MAX;
    this.socketDir = fits(stateDir) ? stateDir : path.join(os.tmpdir(), `hilt-qmp-${sha256(stateDir).slice(0, 12)}`);
    if (!fits(this.socketDir)) throw new HeadnodeError(`QemuHeadnodeDriver: no folder short enough for unix sockets (${this.socketDir})`);
  }

  /** File name stem for a headnode: readable prefix plus a hash (names are arbitrary strings). */
  key(name: string, hashHex = HASH_HEX): string {
    const safe = name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 40);
    return `${safe}-${sha256(name).slice(0, hashHex)}`;
  }

  /** The headnode's disk: a qcow2 overlay of its base image. */
  overlay(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.qcow2`);
  }

  /** The state file of its running VM. */
  stateFile(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.json`);
  }

  /** QEMU's stdout and stderr. */
  log(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.log`);
  }

  /** The name of the headnode whose files these are (written with its disk, checked before any use). */
  nameFile(name: string): string {
    return path.join(this.stateDir, `${this.key(name)}.name`);
  }

  /**
   * Where releases before 128-bit keys kept the overlay, state file and log: a stem with only 10
   * hex digits (40 bits) of the hash, which two names can share. Only read to move them.
   */
  legacy(name: string): { overlay: string; stateFile: string; log: string } {
    const stem = path.join(this.stateDir, this.key(name, LEGACY_HASH_HEX));
    return { overlay: `${stem}.qcow2`, stateFile: `${stem}.json`, log: `${stem}.log` };
  }

  /** QMP socket of the headnode's QEMU (short: sun_path limits unix socket paths to 107 bytes). */
  qmpSocket(name: string): string {
    return path.join(this.socketDir, `${sha256(name).slice(0, HASH_HEX)}.qmp`);
  }

  /**
   * Deterministic tap name (15 chars, the IFNAMSIZ limit) for an hnic: `hn` and 13 base-32
   * digits (65 bits) of a hash. Headnode and hnic names are a tenant's: a name whose tap is
   * another headnode's would have its boot take that tap (QEMU opens an existing tap by name)
   * or remove it from the bridge, so a match must be out of reach of a search, not merely
   * unlikely (13 hex digits were 52 bits).
   */
  tapName(name: string, hnic: string): string {
    return 'hn' + base32(createHash('sha256').update([this.stateDir, name, hnic].join('\0')).digest(), 13);
  }

  /** A locally administered MAC from the same hash: a guest keeps its MACs across restarts. */
  mac(name: string, hnic: string): string {
    const h = sha256('mac', this.stateDir, name, hnic);
    return ['52', '54', h.slice(0, 2), h.slice(2, 4), h.slice(4, 6), h.slice(6, 8)].join(':');
  }
}
