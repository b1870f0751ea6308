/**
 * The simulators of the data-centre switch families (issue 25), each in its own file: Dell
 * OS10, SONiC, Juniper Junos and NVIDIA Cumulus (NVUE). vendors.ts lists them beside the others.
 */
import type { SimVendor } from './vendors';
import { DellOs10 } from './os10';
import { SonicCli } from './sonic';
import { Junos } from './junos';
import { CumulusNvue } from './nvue';

export type FabricName = 'dellos10' | 'sonic' | 'junos' | 'cumulus_nvue';

export const FABRICS: Record<FabricName, SimVendor> = {
  dellos10: new DellOs10(),
  sonic: new SonicCli(),
  junos: new Junos(),
  cumulus_nvue: new CumulusNvue(),
};
