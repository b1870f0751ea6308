/**
 * A record's own entry, never one inherited from Object.prototype: entity state keys records
 * by names clients choose, and a nic named `constructor` or `__proto__` must not find a
 * built-in property where no nic is.
 */
export function own<V>(record: Record<string, V>, key: string): V | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
