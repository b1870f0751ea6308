/**
 * An object keyed by names (of nodes, networks, projects, ports, switches, metadata labels) for a
 * JSON answer or a lookup. It has no prototype, so a name such as `__proto__` is an ordinary key
 * and one such as `constructor` finds nothing it was not given (docs/api-conventions.md, Names),
 * and V8 keeps it as a dictionary from the start. A plain
 * object (or Object.fromEntries) instead gets a new hidden class for each new key in each order of
 * keys, and under requests for ever different names those hidden classes are short-lived objects
 * of the old generation: at 100,000 nodes show_network took 40 % longer making them, and they
 * were a quarter of what the old generation took in under the mixed workload (bench/README.md,
 * "The mixed workload's read tail, fourth round").
 */
export function dict<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}
