/** A REST vendor's registry entry, from its table (as drivers/switch/ssh/driver.ts makes the SSH vendors'). */
import { SCHEMA_BASE } from '../../schema';
import type { SwitchDriverEntry } from '../types';
import { RestDriverOptions, RestSwitchDriver, RestTable } from './driver';
import { REST_FIELDS, restFieldsProblem } from './fields';

export interface RestEntrySpec {
  /** the last part of the type identifier and of the extension name: `brocade` */
  name: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  table: RestTable<any>;
  /** the values `interface_type` may take */
  interfaceTypes: readonly string[];
  /** a `hostname` as the switch's REST service is reached, for messages */
  example: string;
  /** a tagged VLAN only beside a native one (SwitchDriverEntry.nativeFirst) */
  nativeFirst?: boolean;
}

/** Port names as HIL's Brocade and OS9 drivers took them: `1/3`, `101/0/10`. */
export const SLOT_PORT = /^\d+\/\d+(\/\d+)?$/;

export function restSwitchEntry(spec: RestEntrySpec): SwitchDriverEntry<RestSwitchDriver> {
  return {
    type: `${SCHEMA_BASE}/v0/switches/${spec.name}`,
    extension: `hilt.switches.${spec.name}`,
    fields: REST_FIELDS,
    check: (fields) => restFieldsProblem(fields, spec.interfaceTypes, spec.example),
    portName: SLOT_PORT,
    portFormat: '1/3 or 101/0/10 (slot/port or rbridge/slot/port)',
    family: spec.table.family,
    nativeFirst: spec.nativeFirst,
    create: ({ settings }) => new RestSwitchDriver(spec.table, opts(settings.switchTimeoutMs, settings.switchSave)),
  };
}

const opts = (timeoutMs: number, save: boolean): RestDriverOptions => ({ requestTimeoutMs: timeoutMs, save });
