/** The switch drivers the service offers: adding one is its file plus one line here. */
import type { SwitchDriverEntry } from './types';
import { mock } from './mock';
import { ovs } from './ovs';
import { nexus } from './nexus';
import { powerconnect55xx } from './powerconnect55xx';
import { dellN3000 } from './delln3000';
import { aristaEos } from './arista-eos';
import { brocade } from './brocade';
import { dellNos9 } from './dellnos9';
import { dellOs10 } from './dellos10';
import { sonic } from './sonic';
import { junos } from './junos';
import { cumulusNvue } from './cumulus-nvue';

export const SWITCH_DRIVERS: readonly SwitchDriverEntry[] = [mock, nexus, powerconnect55xx, dellN3000, aristaEos, ovs, dellOs10, sonic, junos, cumulusNvue, brocade, dellNos9];
