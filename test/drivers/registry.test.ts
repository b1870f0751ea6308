import { expect } from 'chai';
import { DriverEntry, DriverRegistry, DriverSet } from '../../drivers/registry';
import { requiredStrings } from '../../drivers/schema';
import { DEFAULTS } from '../../src/config';
import { SWITCH_DRIVERS } from '../../drivers/switch';
import { OBM_DRIVERS } from '../../drivers/obm';
import { HEADNODE_DRIVERS } from '../../drivers/headnode';

/** A driver instance that remembers what it was built from and whether it was closed. */
interface Thing { built: string; closed: boolean }

const entry = (type: string, more: Partial<DriverEntry<Thing>> = {}): DriverEntry<Thing> => ({
  type,
  extension: `test.${type}`,
  fields: requiredStrings('host'),
  create: ({ settings }) => ({ built: `${type} in ${settings.dataDir}`, closed: false }),
  ...more,
});

describe('DriverRegistry', () => {
  const reg = new DriverRegistry<Thing>('widget', [
    entry('a', { check: (f) => (String(f.host).includes(' ') ? 'host must not contain spaces' : null) }),
    entry('b', { fields: { type: 'object', additionalProperties: false, properties: { n: { type: 'integer' } } } }),
  ]);

  it('refuses two entries that claim one type', () => {
    expect(() => new DriverRegistry('widget', [entry('a'), entry('a')])).to.throw('two widget drivers claim the type a');
  });

  it('lists its types and extensions in the entries\' order', () => {
    expect(reg.types()).to.deep.equal(['a', 'b']);
    expect(reg.extensions()).to.deep.equal(['test.a', 'test.b']);
  });

  it('returns the type and the driver\'s fields, without `type`, for valid registrations', () => {
    expect(reg.validate({ type: 'a', host: 'h' })).to.deep.equal({ type: 'a', fields: { host: 'h' } });
    expect(reg.validate({ type: 'b', n: 3 })).to.deep.equal({ type: 'b', fields: { n: 3 } });
  });

  it('says why a registration is refused: unknown type, schema, then the entry\'s check', () => {
    expect(reg.validate({ type: 'c', host: 'h' })).to.equal('unknown widget type "c" (known: a, b)');
    expect(reg.validate({ host: 'h' })).to.equal('unknown widget type "undefined" (known: a, b)');
    expect(reg.validate({ type: 'a' })).to.equal('host must be a string');
    expect(reg.validate({ type: 'a', host: 'h', port: 1, x: 2 })).to.equal('unexpected field(s) for a: port, x');
    expect(reg.validate({ type: 'b', n: 'x' })).to.equal('n must be an integer');
    expect(reg.validate({ type: 'a', host: 'h h' })).to.equal('host must not contain spaces');
  });

  it('compiles a schema at its first registration, not at construction: a start loads no Ajv (issue 27)', () => {
    const bad = new DriverRegistry<Thing>('widget', [entry('x', { fields: { type: 'object', properties: { n: { type: 'no such type' } } } })]);
    expect(bad.types()).to.deep.equal(['x']);
    expect(() => bad.validate({ type: 'x', n: 1 })).to.throw(/type/);
  });

  it('every built-in driver\'s registration schema compiles', () => {
    for (const [kind, entries] of [['switch', SWITCH_DRIVERS], ['OBM', OBM_DRIVERS], ['headnode', HEADNODE_DRIVERS.entries]] as const) {
      const all = new DriverRegistry(kind, entries as readonly DriverEntry<unknown>[]);
      for (const type of all.types()) expect(() => all.validate({ type }), `${kind} ${type}`).not.to.throw();
    }
  });

  it('finds nothing for types that are names of Object.prototype', () => {
    for (const type of ['constructor', '__proto__', 'toString']) {
      expect(reg.get(type), type).to.equal(undefined);
      expect(reg.validate({ type, host: 'h' }), type).to.match(/^unknown widget type/);
    }
  });
});

describe('DriverSet', () => {
  const closed: string[] = [];
  const reg = new DriverRegistry<Thing>('widget', [
    entry('a', {
      inspect: (d, { id, fields }) => ({ seen: `${d.built}: ${id} at ${fields.host}` }),
      close: async (d) => { d.closed = true; closed.push(d.built); },
    }),
    entry('b'),
  ]);
  const set = new DriverSet(reg, { settings: { ...DEFAULTS, dataDir: '/data' } });

  it('makes one instance per entry from the service\'s settings, and hands out that one', () => {
    expect(set.driver('a')).to.deep.equal({ built: 'a in /data', closed: false });
    expect(set.driver('a')).to.equal(set.get('a')!.driver);
    expect(set.get('b')!.entry.type).to.equal('b');
    expect(set.driver('c')).to.equal(undefined);
  });

  it('inspects a device through its entry, when the entry can', () => {
    expect(set.inspect('a', { id: 'x', fields: { host: 'h' } })).to.deep.equal({ seen: 'a in /data: x at h' });
    expect(set.inspect('b', { id: 'x', fields: { host: 'h' } })).to.equal(undefined);
    expect(set.inspect('c', { id: 'x', fields: {} })).to.equal(undefined);
  });

  it('closes every instance whose entry says how', async () => {
    await set.close();
    expect(closed).to.deep.equal(['a in /data']);
    expect(set.driver('a')!.closed).to.equal(true);
  });
});
