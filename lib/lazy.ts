/**
 * A package loaded at its first use instead of at the process's start: a start loads only what
 * it serves with (issue 27: a restart of a small folder well under a second). For packages only
 * some installations use (ssh2 for SSH switches, undici for HTTP ones, Redfish, webhooks and
 * OpenID Connect, jose for OpenID Connect), loading them costs a start some hundreds of ms here.
 */
export function lazyModule<T>(load: () => T): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= load());
}
