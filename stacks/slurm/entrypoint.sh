#!/bin/bash
# Entrypoint of the pytest-stacks Slurm image: writes the config for the
# installed Slurm version, makes a fresh munge key, starts munged, slurmctld
# and slurmd in the foreground, and streams the daemon logs to stdout.
set -euo pipefail

share=/usr/local/share/pytest-stacks/slurm
conf=${SLURM_CONF:-/etc/slurm/slurm.conf}
conf_dir=$(dirname "$conf")
log_dir=/var/log/slurm

log() { echo "[entrypoint] $*"; }

# --- Which Slurm is installed ------------------------------------------------
# Debian package version, e.g. "20.11.7+really20.11.4-2+deb11u1" -> "20.11.4".
pkg_version=$(dpkg-query -W -f='${Version}' slurmctld)
upstream=${pkg_version%-*}
upstream=${upstream##*really}
version_ge() { dpkg --compare-versions "$upstream" ge "$1"; }
log "Slurm package $pkg_version (upstream $upstream)"
# Accounting storage the image was built with (ACCOUNTING build arg): "" or "slurmdbd".
accounting=$(cat /etc/pytest-stacks-accounting 2>/dev/null || true)
# Partitions the image was built with (PARTITIONS build arg): "" (debug only) or "limits".
partitions=$(cat /etc/pytest-stacks-partitions 2>/dev/null || true)
# The REST API the image was built with (RESTD build arg): "" or "slurmrestd".
restd=$(cat /etc/pytest-stacks-restd 2>/dev/null || true)
jwt_key=/var/lib/slurm/jwt/jwt_hs256.key

# --- slurm.conf: common part + version-dependent lines -------------------------
install -d -m 0755 "$conf_dir"
{
    cat "$share/slurm.conf"
    echo
    echo "# ---- added by the entrypoint for Slurm $upstream ----"
    if ! version_ge 23.11; then
        # The "none" plugins exist up to 23.02; from 23.11 they were removed
        # and the settings are simply left unset (same meaning).
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
    fi
    if [ "$accounting" = slurmdbd ]; then
        # Jobs are recorded by slurmdbd (started below, before slurmctld), so plain
        # `sacct` answers from accounting storage as on a site.
        echo "AccountingStorageType=accounting_storage/slurmdbd"
        echo "AccountingStorageHost=localhost"
    fi
    if [ "$partitions" = limits ]; then
        # Partitions with a time and a memory limit beside debug (see the file).
        cat "$share/partitions-limits.conf"
    fi
    if [ "$restd" = slurmrestd ]; then
        # slurmrestd passes each request's JWT on to slurmctld, which checks it with this
        # key (made fresh below); munge stays the daemons' own authentication.
        echo "AuthAltTypes=auth/jwt"
        echo "AuthAltParameters=jwt_key=$jwt_key"
    fi
} > "$conf"

# --- cgroup.conf ---------------------------------------------------------------
#   < 22.05        : none needed (proctrack/linuxproc, no cgroup plugin loaded)
#   22.05 .. 24.04 : slurmd always loads a cgroup plugin and has no "disabled";
#                    cgroup/v1 on a cgroup-v1 host (seen working unprivileged),
#                    cgroup/v2 + IgnoreSystemd on a cgroup-v2 host (untested)
#   >= 24.05       : CgroupPlugin=disabled
rm -f "$conf_dir/cgroup.conf"
if version_ge 24.05; then
    echo "CgroupPlugin=disabled" > "$conf_dir/cgroup.conf"
elif version_ge 22.05; then
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' > "$conf_dir/cgroup.conf"
    else
        echo "CgroupPlugin=cgroup/v1" > "$conf_dir/cgroup.conf"
    fi
fi
if [ -f "$conf_dir/cgroup.conf" ]; then
    log "cgroup.conf: $(tr '\n' ' ' < "$conf_dir/cgroup.conf")"
fi

# --- oci.conf: how slurmstepd runs `sbatch --container` jobs, where the image has a runtime --
# Rootless crun as the job's user, its state under /run/user/<user>. The keys differ by
# version (seen here): 22.05 refuses EnvExclude and RunTimeEnvExclude ("unrecognized key")
# and has no %U (uid) pattern, so it gets neither and names the state folder by user name;
# 24.11 and later keep Slurm's own variables out of the container.
rm -f "$conf_dir/oci.conf"
if [ -s /etc/pytest-stacks-oci-runtime ]; then
    runtime=$(cat /etc/pytest-stacks-oci-runtime)
    crun_at="$runtime --rootless=true --root=/run/user/%u/"
    {
        if version_ge 23.02; then
            echo 'EnvExclude="^(SLURM_CONF|SLURM_CONF_SERVER)="'
            echo 'RunTimeEnvExclude="^(SLURM_CONF|SLURM_CONF_SERVER)="'
        fi
        echo "RunTimeQuery=\"$crun_at state %n.%u.%j.%s.%t\""
        echo "RunTimeKill=\"$crun_at kill -a %n.%u.%j.%s.%t\""
        echo "RunTimeDelete=\"$crun_at delete --force %n.%u.%j.%s.%t\""
        echo "RunTimeRun=\"$crun_at run --bundle %b %n.%u.%j.%s.%t\""
    } > "$conf_dir/oci.conf"
    install -d -m 1777 /run/user
    log "oci.conf: $runtime runs container jobs"
fi

# --- The stack's object store, if it has one ------------------------------------
# Its container makes a CA per run and shares it in this volume: trusted here like a site's
# CA is on its nodes, so a job's own curl verifies the store (the store writes it within a
# second of starting, beside us).
store_ca=/run/pytest-stacks/store-trust/ca.crt
if [ -d "${store_ca%/*}" ]; then
    for _ in $(seq 1 300); do [ -s "$store_ca" ] && break; sleep 0.1; done
    [ -s "$store_ca" ] || { log "the object store never shared its CA ($store_ca)"; exit 1; }
    cat "$store_ca" >> /etc/ssl/certs/ca-certificates.crt
    log "trusting the object store's CA"
fi

# --- Directories -------------------------------------------------------------
install -d -o slurm -g slurm -m 0755 /var/lib/slurm /var/lib/slurm/slurmctld "$log_dir" /run/slurm
install -d -m 0755 /var/lib/slurm/slurmd
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
: > "$log_dir/slurmctld.log"; : > "$log_dir/slurmd.log"
chown slurm:slurm "$log_dir/slurmctld.log"
# The completion log is written by slurmctld and read by `sacct -c`. sacct
# loads the jobcomp/filetxt plugin, whose init opens the file for appending
# (and slurmctld resets its mode to 0644), so `sacct -c` works only for root and
# the SlurmUser "slurm", not for "submitter".
install -o slurm -g slurm -m 0644 /dev/null "$log_dir/jobcomp.log"

# --- Munge key: fresh for every container start, never stored in the image -----
rm -f /etc/munge/munge.key
dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

# --- JWT key (transport rest): fresh for every container start, like the munge key -----
# HS256, 32 random bytes, readable by SlurmUser only (slurmctld signs and checks tokens).
if [ "$restd" = slurmrestd ]; then
    install -d -o slurm -g slurm -m 0700 "${jwt_key%/*}"
    rm -f "$jwt_key"
    (umask 077; dd if=/dev/urandom of="$jwt_key" bs=32 count=1 status=none)
    chown slurm:slurm "$jwt_key"
    chmod 0600 "$jwt_key"
fi

# --- Daemons -----------------------------------------------------------------
pids=()
# shellcheck disable=SC2317,SC2329  # called by the trap below (shellcheck 0.9 says SC2317)
stop() {
    log "stopping"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait || true
    exit 0
}
trap stop TERM INT

# Daemon logs go to the files; stdout shows them through `tail -F`.
streamed=("$log_dir/slurmctld.log" "$log_dir/slurmd.log")
if [ "$accounting" = slurmdbd ]; then
    : > "$log_dir/slurmdbd.log"; : > "$log_dir/mariadb.log"
    chown slurm:slurm "$log_dir/slurmdbd.log"; chown mysql:mysql "$log_dir/mariadb.log"
    streamed+=("$log_dir/slurmdbd.log" "$log_dir/mariadb.log")
fi
if [ "$restd" = slurmrestd ]; then streamed+=("$log_dir/slurmrestd.log"); fi
tail -n +1 -F "${streamed[@]}" 2>/dev/null &
pids+=($!)

# munged's socket: wait while munged lives (60 s at most: a loaded machine starting
# many stacks at once took more than 5 s), and fail at once if it died.
runuser -u munge -- /usr/sbin/munged --foreground &
munged=$!
pids+=("$munged")
for _ in $(seq 1 600); do
    [ -S /run/munge/munge.socket.2 ] && break
    if ! kill -0 "$munged" 2>/dev/null; then
        log "munged exited before creating its socket /run/munge/munge.socket.2"
        exit 1
    fi
    sleep 0.1
done
if [ ! -S /run/munge/munge.socket.2 ]; then
    log "munged did not create its socket /run/munge/munge.socket.2 within 60 s"
    exit 1
fi
log "munged started"

# --- Accounting storage: MariaDB, then slurmdbd, before slurmctld -----------------
if [ "$accounting" = slurmdbd ]; then
    # shellcheck source=/dev/null
    . "$share/accounting.sh"
    start_accounting
fi

# Foreground (-D) daemons run as children of this script. Their stderr repeats
# the log file, so it goes to *.stderr (not streamed; shown if a daemon dies,
# e.g. on a config error before the log file is open).
/usr/sbin/slurmctld -D >/dev/null 2>"$log_dir/slurmctld.stderr" &
pids+=($!)
ctld_pid=$!
/usr/sbin/slurmd -D -N localhost >/dev/null 2>"$log_dir/slurmd.stderr" &
pids+=($!)
slurmd_pid=$!
log "slurmctld (pid $ctld_pid) and slurmd (pid $slurmd_pid) started"

# slurmrestd as its own unprivileged user (it refuses root and SlurmUser), JWT only, on 6820
# (compose publishes it on 127.0.0.1 only). SLURM_JWT=daemon: it authenticates to slurmctld
# with each request's token, not munge. The container has no right to make namespaces, so
# the System V and file-system unshare it does by default are off (its user check stays).
# Its slurmdbd API only where there is a slurmdbd: without one that plugin fails to load
# ("Failure loading plugin path bindings") and slurmrestd exits.
if [ "$restd" = slurmrestd ]; then
    : > "$log_dir/slurmrestd.log"
    apis=openapi/slurmctld
    if [ "$accounting" = slurmdbd ]; then apis=openapi/slurmctld,openapi/slurmdbd; fi
    SLURM_JWT=daemon SLURMRESTD_SECURITY=disable_unshare_sysv,disable_unshare_files \
        runuser -u slurmrestd -- /usr/sbin/slurmrestd -a rest_auth/jwt -s "$apis" 0.0.0.0:6820 \
        >>"$log_dir/slurmrestd.log" 2>&1 &
    pids+=($!)
    log "slurmrestd (pid $!) started on port 6820"
fi

# If any daemon exits, stop the container (so a broken stack is visible).
set +e
wait -n "${pids[@]}"
rc=$?
log "a daemon exited (status $rc); stopping the container"
tail -n 20 "$log_dir"/*.stderr
kill -TERM "${pids[@]}" 2>/dev/null
wait
exit "${rc:-1}"
