#!/bin/bash
# As upstream mini's start.sh: cap FD limits the daemons ask for, run the pre-exec hook,
# then supervisord in the foreground.
prog=${0##*/}
hard_max=$(ulimit -Hn)
rm -f /etc/condor/config.d/01-fdfix.conf
for attr in COLLECTOR_MAX_FILE_DESCRIPTORS SHARED_PORT_MAX_FILE_DESCRIPTORS \
            SCHEDD_MAX_FILE_DESCRIPTORS MAX_FILE_DESCRIPTORS; do
    config_max=$(condor_config_val -evaluate $attr 2>/dev/null)
    if [[ $config_max =~ ^[0-9]+$ && $config_max -gt $hard_max ]]; then
        printf '%s=%s\n' "$attr" "$hard_max" >> /etc/condor/config.d/01-fdfix.conf
    fi
done
[[ -s /etc/condor/config.d/01-fdfix.conf ]] && \
    echo "# This file was created by $prog" >> /etc/condor/config.d/01-fdfix.conf
if [[ -f /root/config/pre-exec.sh ]]; then
    bash -x /root/config/pre-exec.sh
fi
exec /usr/bin/supervisord -c /etc/supervisord.conf
