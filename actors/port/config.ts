/** A port's VLAN configuration: what a change makes of it, and what a nic's networks put on it. */
import { EMPTY_CONFIG, PortChange, PortConfig } from './protocol';
import { NATIVE } from '../nic/protocol';

/** The configuration after `change`. */
export function configAfter(config: PortConfig, change: PortChange): PortConfig {
  switch (change.kind) {
    case 'attach':
      return change.native
        ? { ...config, native: change.vlan }
        : { ...config, tagged: [...new Set([...config.tagged, change.vlan])].sort((a, b) => a - b) };
    case 'detach':
      return change.native ? { ...config, native: null } : { ...config, tagged: config.tagged.filter((v) => v !== change.vlan) };
    case 'revert':
      return EMPTY_CONFIG;
    case 'reapply':
      return config;
  }
}

export const sameConfig = (a: PortConfig, b: PortConfig) =>
  a.native === b.native && a.tagged.length === b.tagged.length && a.tagged.every((v, i) => v === b.tagged[i]);

/** The VLANs a nic's networks (channel → network) put on its port. */
export function configFor(networks: Record<string, string>, vlanOf: (network: string) => number | undefined): PortConfig {
  const config: PortConfig = { native: null, tagged: [] };
  for (const [channel, network] of Object.entries(networks)) {
    const vlan = vlanOf(network);
    if (vlan === undefined) continue;
    if (channel === NATIVE) config.native = vlan;
    else config.tagged.push(vlan);
  }
  config.tagged.sort((a, b) => a - b);
  return config;
}
