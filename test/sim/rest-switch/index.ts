/** The REST switch simulators by vendor name (brocade, dellnos9), started on the loopback. */
import { BrocadeSimOptions, BrocadeVendor } from './brocade';
import { Os9SimOptions, Os9Vendor } from './dellnos9';
import { RestSimOptions, RestSwitchSim } from './server';

export type RestVendorName = 'brocade' | 'dellnos9';
export const REST_VENDORS: RestVendorName[] = ['brocade', 'dellnos9'];

export type BrocadeSim = RestSwitchSim<import('./brocade').BrocadePort> & { vendor: BrocadeVendor };
export type Os9Sim = RestSwitchSim<import('./dellnos9').Os9Port> & { vendor: Os9Vendor };
export type AnyRestSim = BrocadeSim | Os9Sim;

export function startBrocadeSim(opts: RestSimOptions & BrocadeSimOptions): Promise<BrocadeSim> {
  return new RestSwitchSim(new BrocadeVendor(opts), opts).start() as Promise<BrocadeSim>;
}

export function startOs9Sim(opts: RestSimOptions & Os9SimOptions): Promise<Os9Sim> {
  return new RestSwitchSim(new Os9Vendor(opts), opts).start() as Promise<Os9Sim>;
}

export function startRestSim(vendor: RestVendorName, opts: RestSimOptions & BrocadeSimOptions & Os9SimOptions): Promise<AnyRestSim> {
  return vendor === 'brocade' ? startBrocadeSim(opts) : startOs9Sim(opts);
}
