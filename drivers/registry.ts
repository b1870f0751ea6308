/**
 * One registry per driver kind (switch, OBM, headnode). Each driver file exports one entry;
 * the kind's `index.ts` lists the entries. Adding a driver is one new file plus one line in that
 * list: validation of its registration fields, its extension name, its construction and its
 * inspection all come from the entry, and nothing else in the service names a driver.
 */
import type { ValidateFunction } from 'ajv';
import type { DriverSettings } from './settings';
import { quote } from '../lib/text';
import { lazyModule } from '../lib/lazy';

/** Field names a client sent, as a message lists them: a prefix of each, at most five. */
export function fieldList(fields: string[]): string {
  const shown = fields.slice(0, 5).map((f) => (/^[A-Za-z0-9_.-]{1,64}$/.test(f) ? f : quote(f)));
  return shown.join(', ') + (fields.length > 5 ? ` and ${fields.length - 5} more` : '');
}

/** What a driver is built from: the service's settings that drivers read (its data folder included). */
export interface DriverContext {
  settings: DriverSettings;
}

/** Registration fields as stored: the driver's own, already validated. */
export type DriverFields = Record<string, unknown>;

export interface DriverEntry<D> {
  /**
   * The identifier clients send as `type` (HIL's, e.g. `http://schema.massopencloud.org/haas/v0/obm/ipmi`);
   * for headnode drivers, which clients never name, the value of HILT_HEADNODE_DRIVER.
   */
  readonly type: string;
  /** How list_active_extensions names the driver, e.g. `hilt.obm.ipmi`. */
  readonly extension: string;
  /** JSON schema of the registration fields besides `type`; unknown fields are refused. */
  readonly fields: object;
  /**
   * The fields that are secrets, sealed at rest (docs/identity.md); unset: every field whose
   * name says password, secret or token.
   */
  readonly secrets?: readonly string[];
  /** Checks a schema cannot express (e.g. a BMC address that must parse): a reason, or null. */
  check?(fields: DriverFields): string | null;
  /** The driver instance; the service makes one per entry. */
  create(ctx: DriverContext): D;
  /**
   * What an admin's `GET /admin/actors/<kind>/<id>` shows of the device beside the actor's
   * state (a mock driver's simulated hardware, e.g. `{mockPorts}`), added to the answer's
   * properties; or undefined.
   */
  inspect?(driver: D, device: { id: string; fields: DriverFields }): Record<string, unknown> | undefined;
  /** Releases what the instance holds (files, connections) when the service stops. */
  close?(driver: D): Promise<void>;
}

export interface Registered { type: string; fields: DriverFields }

/** How a kind's refusals name its fields (an OBM's arrive inside `obm`, a switch's at the top). */
export interface RegistryWording {
  fieldPrefix: string;
  /** a missing or non-string `type` is named as such (else it is an unknown type) */
  typeRequired?: boolean;
  unexpected(type: string, extra: string[]): string;
}

const defaultWording: RegistryWording = {
  fieldPrefix: '',
  unexpected: (type, extra) => `unexpected field(s) for ${type}: ${fieldList(extra)}`,
};

/**
 * One Ajv for every registry, made (and each entry's schema compiled) at the first registration
 * checked: loading Ajv and compiling its meta-schema cost a start ~200 ms (issue 27).
 */
const ajv = lazyModule(() => {
  const Ajv = (require('ajv') as typeof import('ajv')).default;
  return new Ajv({ allErrors: false, strict: true });
});

/** A field that is a secret by its name (as src/redact.ts masks them). */
const SECRET_FIELD = /password|secret|token/i;

export class DriverRegistry<D, E extends DriverEntry<D> = DriverEntry<D>> {
  /** Null prototype: a `type` such as "constructor" finds nothing. */
  private readonly byType: Record<string, { entry: E; validate?: ValidateFunction }> = Object.create(null);

  constructor(readonly kind: string, readonly entries: readonly E[], private readonly wording: RegistryWording = defaultWording) {
    for (const entry of entries) {
      if (this.byType[entry.type]) throw new Error(`two ${kind} drivers claim the type ${entry.type}`);
      this.byType[entry.type] = { entry };
    }
  }

  get(type: string): E | undefined {
    return this.byType[type]?.entry;
  }

  /** Which of a registration's fields are secrets (a type no driver claims any more: by their names). */
  secretFields(type: string, fields: DriverFields): string[] {
    const listed = this.get(type)?.secrets;
    return Object.keys(fields).filter((k) => (listed ? listed.includes(k) : SECRET_FIELD.test(k)));
  }

  types(): string[] {
    return this.entries.map((e) => e.type);
  }

  extensions(): string[] {
    return this.entries.map((e) => e.extension);
  }

  /**
   * `{type, ...fields}` as a client sent it → the validated registration, or why it is refused,
   * worded as the service always worded it: unknown fields by name, then the first field that is
   * missing or of the wrong type (`<prefix><field> must be a string`), then the entry's check.
   */
  validate(body: Record<string, unknown>): Registered | string {
    const { type, ...fields } = body;
    if (typeof type !== 'string' && this.wording.typeRequired) return `${this.wording.fieldPrefix}type must be a string`;
    const known = typeof type === 'string' ? this.byType[type] : undefined;
    if (!known) return `unknown ${this.kind} type ${quote(String(type))} (known: ${this.types().join(', ')})`;
    const schema = known.entry.fields as { properties?: Record<string, { type?: string }>; additionalProperties?: boolean };
    const properties = schema.properties ?? {};
    const extra = Object.keys(fields).filter((k) => !Object.hasOwn(properties, k));
    if (extra.length && schema.additionalProperties === false) return this.wording.unexpected(known.entry.type, extra);
    const check = (known.validate ??= ajv().compile(known.entry.fields));
    if (!check(fields)) {
      const e = check.errors![0];
      const field = e.keyword === 'required' ? (e.params as { missingProperty: string }).missingProperty : e.instancePath.slice(1).split('/')[0];
      const expected = Object.hasOwn(properties, field) ? properties[field].type : undefined;
      const what = e.keyword === 'required' && expected === undefined ? 'is required'
        : e.keyword === 'required' || e.keyword === 'type'
          ? `must be ${expected === 'string' ? 'a string' : expected === 'integer' ? 'an integer' : expected === 'boolean' ? 'a boolean' : `of type ${expected}`}`
          : e.message;
      return `${this.wording.fieldPrefix}${field} ${what}`;
    }
    const problem = known.entry.check?.(fields);
    return problem ?? { type: known.entry.type, fields };
  }
}

/**
 * A registry's drivers as one service runs them: one instance per entry, made at start. One
 * instance, because a driver's own state (a mock's simulated hardware) must be the same for
 * every call and for inspection.
 */
export class DriverSet<D, E extends DriverEntry<D> = DriverEntry<D>> {
  private readonly instances: Record<string, D> = Object.create(null);

  constructor(readonly registry: DriverRegistry<D, E>, ctx: DriverContext) {
    for (const entry of registry.entries) this.instances[entry.type] = entry.create(ctx);
  }

  /** The entry and instance of a type, or undefined for a type no driver claims. */
  get(type: string): { entry: E; driver: D } | undefined {
    const entry = this.registry.get(type);
    return entry && { entry, driver: this.instances[type]! };
  }

  driver(type: string): D | undefined {
    return this.get(type)?.driver;
  }

  /** The entry's inspection of one device (see DriverEntry.inspect), or undefined. */
  inspect(type: string, device: { id: string; fields: DriverFields }): Record<string, unknown> | undefined {
    const found = this.get(type);
    return found?.entry.inspect?.(found.driver, device);
  }

  async close(): Promise<void> {
    for (const entry of this.registry.entries) await entry.close?.(this.instances[entry.type]!);
  }
}
