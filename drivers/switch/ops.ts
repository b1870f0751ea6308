/**
 * A change of one port as the driver contract asks it (drivers/switch/types.ts), for drivers that
 * plan every change the same way whatever the call (the SSH tables, the REST tables): the five
 * change calls become one `change(port, op)`.
 */
import type { PortVlans, SwitchSession } from './types';

export type PortOp =
  | { kind: 'setNative'; vlan: number }
  | { kind: 'removeNative' }
  | { kind: 'addTagged'; vlan: number }
  | { kind: 'removeTagged'; vlan: number }
  | { kind: 'reset' };

/** An operation in words, for messages. */
export function opText(op: PortOp): string {
  switch (op.kind) {
    case 'setNative': return `set the native VLAN to ${op.vlan}`;
    case 'removeNative': return 'remove the native VLAN';
    case 'addTagged': return `add tagged VLAN ${op.vlan}`;
    case 'removeTagged': return `remove tagged VLAN ${op.vlan}`;
    case 'reset': return 'reset the port';
  }
}

/** A session whose five change calls are one `change(port, op)`. */
export abstract class PortOpSession implements SwitchSession {
  protected abstract change(port: string, op: PortOp): Promise<void>;
  abstract getPortVlans(port: string): Promise<PortVlans>;
  abstract close(signal?: AbortSignal): Promise<void>;

  setNative(port: string, vlan: number): Promise<void> {
    return this.change(port, { kind: 'setNative', vlan });
  }

  removeNative(port: string): Promise<void> {
    return this.change(port, { kind: 'removeNative' });
  }

  addTagged(port: string, vlan: number): Promise<void> {
    return this.change(port, { kind: 'addTagged', vlan });
  }

  removeTagged(port: string, vlan: number): Promise<void> {
    return this.change(port, { kind: 'removeTagged', vlan });
  }

  resetPort(port: string): Promise<void> {
    return this.change(port, { kind: 'reset' });
  }
}
