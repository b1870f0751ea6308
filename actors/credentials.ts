/**
 * Driver secrets in the actors' data (docs/identity.md, Credentials at rest). The node actor
 * holds its BMC's registration fields, the switch actor its switch's; each seals the secret ones
 * as it decides the event that holds them, so no plaintext reaches an event, a snapshot, a read
 * model or a backup. Only the hardware corridor opens them, for the driver's call
 * (hardware/power.ts, the switch sessions' SwitchInfo).
 *
 * mapStoredFields is the one place that knows where fields sit in each stored shape, old
 * formats included: the start-up upgrade of plaintext credentials and the key rotation
 * (src/secrets/) re-encode stored events and snapshots through it.
 */
import type { Obm, LegacyObm, NodeEvent, NodeState } from './node/protocol';
import type { SwitchEvent, SwitchState } from './switch/protocol';
import type { WebhookEvent, WebhookState } from './webhook/protocol';

export type Fields = Record<string, unknown>;

/** What the actors and the hardware corridor may do with driver secrets. */
export interface Credentials {
  /** A registration's fields with its driver's secret fields sealed (a webhook's: its `secret`). */
  seal(kind: SealKind, type: string, fields: Fields): Fields;
  /** The fields as a driver needs them: every sealed value opened. */
  open(fields: Fields): Fields;
}

/** No sealing: actor unit tests that build behaviours without the service. */
export const PLAIN: Credentials = { seal: (_k, _t, f) => f, open: (f) => f };

/** The kinds whose stored data holds driver fields (a webhook: its signing secret, src/events/webhooks.ts). */
export const CREDENTIAL_KINDS = ['node', 'switch', 'webhook'] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

/** Whose fields: a BMC driver's, a switch driver's, or a webhook's (`{secret}`). */
export type SealKind = 'obm' | 'switch' | 'webhook';

type MapFields = (driver: SealKind, type: string, fields: Fields) => Fields;

/** A webhook's event or state with `f` applied to its secret; the same object when nothing changed. */
function mapWebhook<T extends { secret?: unknown }>(x: T, f: MapFields): T {
  if (x.secret === undefined) return x;
  const fields = f('webhook', '', { secret: x.secret });
  return fields.secret === x.secret ? x : { ...x, secret: fields.secret };
}

function mapObm(obm: Obm | LegacyObm, f: MapFields): Obm | LegacyObm {
  if ('fields' in obm) {
    const fields = f('obm', obm.type, obm.fields);
    return fields === obm.fields ? obm : { ...obm, fields };
  }
  // The first format's flat OBM keeps its shape.
  const { type, ...rest } = obm;
  const fields = f('obm', type, rest);
  return fields === rest ? obm : ({ type, ...fields } as LegacyObm);
}

function mapNodeState(s: NodeState | null, f: MapFields): NodeState | null {
  if (!s?.obm) return s;
  const obm = mapObm(s.obm, f) as Obm;
  return obm === s.obm ? s : { ...s, obm };
}

function mapSwitchState(s: SwitchState | null, f: MapFields): SwitchState | null {
  if (!s?.fields) return s;
  const fields = f('switch', s.type, s.fields);
  return fields === s.fields ? s : { ...s, fields };
}

/**
 * A stored value of `kind` (an event, or with `state` a snapshot's state) with `f` applied to
 * the driver fields it holds; the same object when `f` changed nothing.
 */
export function mapStoredFields(kind: CredentialKind, data: unknown, state: boolean, f: MapFields): unknown {
  if (!data || typeof data !== 'object') return data;
  if (kind === 'webhook') {
    if (state) return mapWebhook(data as WebhookState, f);
    const e = data as WebhookEvent;
    return e.type === 'WebhookCreated' ? mapWebhook(e, f) : e;
  }
  if (kind === 'node') {
    if (state) return mapNodeState(data as NodeState, f);
    const e = data as NodeEvent;
    if (e.type === 'NodeRegistered') {
      const obm = mapObm(e.obm, f);
      return obm === e.obm ? e : { ...e, obm };
    }
    if (e.type === 'NodeUpgraded') {
      const s = mapNodeState(e.state, f);
      return s === e.state ? e : { ...e, state: s };
    }
    return e;
  }
  if (state) return mapSwitchState(data as SwitchState, f);
  const e = data as SwitchEvent;
  if (e.type === 'SwitchRegistered') {
    const fields = f('switch', e.switchType, e.fields);
    return fields === e.fields ? e : { ...e, fields };
  }
  if (e.type === 'SwitchUpgraded') {
    const s = mapSwitchState(e.state, f);
    return s === e.state ? e : { ...e, state: s };
  }
  return e;
}
