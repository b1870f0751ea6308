#!/bin/sh
# ipmi_sim's chassis_control hook: the simulated chassis. ipmi_sim runs it as
#   chassis_control.sh 0x20 get power [boot]   -> must print "parm:value" lines and exit 0
#   chassis_control.sh 0x20 set power 1 [...]  -> parm/value pairs
# State lives in plain files under $IPMISIM_STATE (power: 0|1, boot: pxe|default|...), and every
# call is appended to $IPMISIM_STATE/log with a timestamp, so tests can see what the BMC was told
# and can change the power state from outside by writing the power file.
STATE=${IPMISIM_STATE:?IPMISIM_STATE must name the chassis state directory}
mkdir -p "$STATE"
echo "$(date +%s.%N) $*" >> "$STATE/log"
op=$2; shift 2
case "$op" in
  get)
    for p in "$@"; do
      case "$p" in
        power) v=$(cat "$STATE/power" 2>/dev/null || echo 0) ;;
        boot)  v=$(cat "$STATE/boot" 2>/dev/null || echo default) ;;
        *) echo "bad parm $p"; exit 1 ;;
      esac
      echo "$p:$v"
    done ;;
  set)
    # A test makes the BMC refuse boot settings (as a real one may) with the file refuse-boot.
    case " $* " in *" boot "*) [ -e "$STATE/refuse-boot" ] && { echo "boot settings refused"; exit 1; } ;; esac
    while [ $# -gt 0 ]; do
      p=$1; v=$2; shift 2
      case "$p" in
        # write-then-rename, so a test reading the file never sees it half-written
        power|boot|reset|shutdown|identify) echo "$v" > "$STATE/$p.tmp" && mv "$STATE/$p.tmp" "$STATE/$p" ;;
        *) echo "bad parm $p"; exit 1 ;;
      esac
    done ;;
  *) echo "bad op $op"; exit 1 ;;
esac
exit 0
