/**
 * The address of a device a driver contacts, checked at registration: a host that is no DNS
 * name nor IP literal (`sw(1)`, `sw 1`, `a..b`) would only fail later, at every call, with a
 * resolver's error or a timeout.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** A DNS label: letters, digits, `-` and `_` (used in lab names), 1-63 characters, no `-` at either end. */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

/**
 * A DNS name (at most 253 characters, an optional final dot) or an IPv4 address. A name of
 * digits and dots only must be an IPv4 address (`1.2.3` and `256.1.1.1` are typing errors).
 */
export function isHostName(host: string): boolean {
  if (isIPv4(host)) return true;
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (!name || name.length > 253 || /^[\d.]+$/.test(name)) return false;
  return name.split('.').every((l) => LABEL.test(l));
}

/**
 * `host`, `host:port`, a bare IPv6 address (its colons are no port separator), `[v6]` or
 * `[v6]:port` → the host (IPv6 without brackets) and the port, or why it is refused.
 */
export function parseHostPort(text: string, defaultPort: number): { host: string; port: number } | string {
  let host: string;
  let port: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (bracketed) {
    [, host, port] = bracketed as unknown as [string, string, string | undefined];
    if (!isIPv6(host)) return `"${text}" is not an IPv6 address in brackets`;
  } else if (text.split(':').length > 2) {
    host = text;
    if (!isIPv6(host)) return `"${text}" is not a host name or address (an IPv6 address with a port takes brackets: [addr]:port)`;
  } else {
    [host, port] = text.split(':') as [string, string | undefined];
    if (!isHostName(host)) return `"${text}" is not a host name or address`;
  }
  if (port === undefined) return { host, port: defaultPort };
  const n = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
  if (!(n >= 1 && n <= 65535)) return `"${text}": the port must be 1-65535`;
  return { host, port: n };
}

/** Whether a parsed URL's host (as WHATWG's URL spells it: IPv6 in brackets) is a host name or IP literal. */
export function isUrlHost(url: URL): boolean {
  const h = url.hostname;
  return h.startsWith('[') ? isIPv6(h.slice(1, -1)) : isHostName(h);
}
