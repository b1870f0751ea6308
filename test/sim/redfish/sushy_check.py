"""Drives the Redfish BMC simulator (test/helpers/redfish-sim.ts) with sushy, the Redfish client
library of OpenStack Ironic (Debian package python3-sushy), to check that the simulator is
faithful enough for a real client: log in with a session, find the only system, read its power
state, reset it, set its boot override, log out. Prints one JSON object of what sushy saw.

usage: sushy_check.py URL USER CA_CERT_FILE [refused]
(the password comes in SUSHY_CHECK_PASSWORD). With `refused`, the login is expected to fail:
prints how sushy reported the BMC's error.
"""
import gc
import json
import os
import sys

import sushy


def refused(url, user, password, ca_file):
    try:
        root = sushy.Sushy(url, username=user, password=password, verify=ca_file)
        root.get_system()
    except sushy.exceptions.HTTPError as e:
        print(json.dumps({'error': type(e).__name__, 'status': e.status_code,
                          'code': e.code, 'detail': e.detail}))
        return
    print(json.dumps({'error': None}))


def main():
    url, user, ca_file = sys.argv[1:4]
    password = os.environ['SUSHY_CHECK_PASSWORD']
    if sys.argv[4:] == ['refused']:
        return refused(url, user, password, ca_file)
    seen = {}
    root = sushy.Sushy(url, username=user, password=password, verify=ca_file)
    seen['redfish_version'] = root.redfish_version
    seen['session'] = root._auth.get_session_resource_id()
    system = root.get_system()  # the only member of /redfish/v1/Systems
    seen['system'] = system.path
    seen['power_before'] = system.power_state.value
    seen['allowed_resets'] = sorted(v.value for v in system.get_allowed_reset_system_values())

    system.reset_system(sushy.ResetType.ON)
    system.refresh()
    seen['power_after_on'] = system.power_state.value

    system.set_system_boot_options(target=sushy.BootSource.PXE,
                                   enabled=sushy.BootSourceOverrideEnabled.ONCE)
    system.refresh()
    seen['boot_after_patch'] = [system.boot.target.value, system.boot.enabled.value]

    system.reset_system(sushy.ResetType.FORCE_RESTART)
    system.refresh()
    seen['boot_after_restart'] = [system.boot.target.value, system.boot.enabled.value]
    seen['power_after_restart'] = system.power_state.value

    system.reset_system(sushy.ResetType.FORCE_OFF)
    system.refresh()
    seen['power_after_off'] = system.power_state.value

    # sushy logs out (DELETE of its session) when the root object goes away
    del system
    del root
    gc.collect()
    print(json.dumps(seen))


if __name__ == '__main__':
    main()
