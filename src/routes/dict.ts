/**
 * An object keyed by names (of nodes, networks) for a JSON answer. It has no prototype, so a name
 * such as `__proto__` is an ordinary key, and V8 keeps it as a dictionary from the start. A plain
 * object (or Object.fromEntries) instead gets a new hidden class for each new key in each order of
 * keys, and under requests for ever different names those hidden classes are short-lived objects
 * of the old generation: show_network spent most of its time making them, and at 100,000 nodes
 * they brought a major collection every 20 s (bench/README.md, "The mixed workload's read tail,
 * fourth round").
 */
export function dict<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}
