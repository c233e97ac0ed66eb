#!/bin/bash
# Entrypoint of the pytest-stacks multi-node Slurm image. One image, one role per
# container, chosen by the first argument (the compose `command`):
#   ctld   munged + slurmctld; makes the stack's munge key
#   node   munged + slurmd (node name = container hostname: node1, node2)
#   login  munged + sshd: Slurm client commands for the submit user over SSH
#   jump   sshd only: the bastion in front of the login node
# Every role writes its own config at start, runs its daemons in the foreground
# as children of this script, and stops the container if one of them exits.
set -euo pipefail

share=/usr/local/share/pytest-stacks/slurm-cluster
conf=${SLURM_CONF:-/etc/slurm/slurm.conf}
conf_dir=$(dirname "$conf")
log_dir=/var/log/slurm
# The key volume: written by ctld, read by node/login (mounted read-only there).
key_dir=/run/pytest-stacks/munge-key
login_user=submitter

role=${1:-}
log() { echo "[entrypoint:${role:-?}] $*"; }
die() { log "FATAL: $*" >&2; exit 1; }

case "$role" in
    ctld|node|login|jump) ;;
    *) die "usage: entrypoint.sh ctld|node|login|jump (got '${role}')" ;;
esac
# The healthcheck (healthcheck.sh without argument) reads the role from here.
install -d -m 0755 /run/pytest-stacks
echo "$role" > /run/pytest-stacks/role

# --- Slurm config (every role but jump) ----------------------------------------
slurm_config() {
    local pkg upstream
    pkg=$(dpkg-query -W -f='${Version}' slurmctld)
    upstream=${pkg%-*}
    upstream=${upstream##*really}
    log "Slurm package $pkg (upstream $upstream)"
    # Only >= 24.05 is supported: older Slurm needs TaskPlugin=task/none etc. and a
    # cgroup plugin (see stacks/slurm), and Debian's OpenMPI before trixie has no
    # PMIx that matches Slurm's. Tested: 24.11.5 (trixie).
    dpkg --compare-versions "$upstream" ge 24.05 \
        || die "slurm-cluster needs Slurm >= 24.05 (installed: $upstream)"
    install -d -m 0755 "$conf_dir"
    install -m 0644 "$share/slurm.conf" "$conf"
    echo "CgroupPlugin=disabled" > "$conf_dir/cgroup.conf"
    install -d -o slurm -g slurm -m 0755 /var/lib/slurm /var/lib/slurm/slurmctld /run/slurm
    install -d -m 0755 /var/lib/slurm/slurmd
    # The logs volume (ctld, node1, node2, login). Each role creates only its
    # own files in it; slurmctld needs the directory writable as slurm.
    install -d -o slurm -g slurm -m 0755 "$log_dir"
}

# --- Munge (every role but jump) ------------------------------------------------
# One key per stack instance, never in the image:
#   - MUNGE_KEY_B64 set (base64 of >= 32 bytes): every role decodes it;
#   - else ctld writes 1024 random bytes to the key volume when it holds no key
#     yet (the first start of this stack instance), and node/login wait for it
#     and copy it. The volume lives as long as the instance (`down -v` ends
#     it), so a restarted container finds the key its peers use; a new
#     instance gets a new key.
munge_key() {
    install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
    install -d -o munge -g munge -m 0755 /run/munge
    rm -f /etc/munge/munge.key
    local key=/etc/munge/munge.key
    if [ -n "${MUNGE_KEY_B64:-}" ]; then
        printf '%s' "$MUNGE_KEY_B64" | base64 -d > "$key" \
            || die "MUNGE_KEY_B64 is not valid base64"
        [ "$(stat -c %s "$key")" -ge 32 ] || die "MUNGE_KEY_B64 decodes to fewer than 32 bytes"
        log "munge key from MUNGE_KEY_B64"
    elif [ "$role" = ctld ]; then
        install -d -m 0700 "$key_dir"
        if [ -s "$key_dir/munge.key" ]; then
            log "munge key of this stack instance found in the key volume"
        else
            dd if=/dev/urandom of="$key_dir/.munge.key.new" bs=1024 count=1 status=none
            chmod 0400 "$key_dir/.munge.key.new"
            # Atomic: a reader never sees half a key.
            mv -f "$key_dir/.munge.key.new" "$key_dir/munge.key"
            log "fresh munge key written to the key volume"
        fi
        cp "$key_dir/munge.key" "$key"
    else
        local i
        for i in $(seq 1 600); do
            [ -s "$key_dir/munge.key" ] && break
            [ "$i" = 1 ] && log "waiting for ctld's munge key in $key_dir"
            sleep 0.1
        done
        [ -s "$key_dir/munge.key" ] || die "no munge key in $key_dir after 60 s (is ctld up?)"
        cp "$key_dir/munge.key" "$key"
        log "munge key copied from the key volume"
    fi
    chown munge:munge "$key"
    chmod 0400 "$key"
}

# Slurm's daemons and clients need munged's socket. Wait while munged lives (60 s
# at most: a loaded machine starting many stacks at once took more than 5 s), and
# fail at once if it died.
start_munged() {
    local socket=/run/munge/munge.socket.2
    runuser -u munge -- /usr/sbin/munged --foreground &
    local munged=$!
    pids+=("$munged")
    local i
    for i in $(seq 1 600); do
        [ -S "$socket" ] && break
        kill -0 "$munged" 2>/dev/null || die "munged exited before creating its socket $socket"
        sleep 0.1
    done
    [ -S "$socket" ] || die "munged did not create its socket $socket within 60 s"
    log "munged started"
}

# --- SSH (login, jump) -------------------------------------------------------------
ssh_setup() {
    [ -n "${SSH_AUTHORIZED_KEY:-}" ] \
        || die "SSH_AUTHORIZED_KEY is empty: set it to the OpenSSH public key line of the client"
    local home ssh_dir
    home=$(getent passwd "$login_user" | cut -d: -f6)
    ssh_dir="$home/.ssh"
    install -d -o "$login_user" -g "$login_user" -m 0700 "$ssh_dir"
    # Exactly the given key, nothing else (one line; a trailing newline added).
    printf '%s\n' "$SSH_AUTHORIZED_KEY" > "$ssh_dir/authorized_keys"
    chown "$login_user:$login_user" "$ssh_dir/authorized_keys"
    chmod 0600 "$ssh_dir/authorized_keys"
    ssh-keygen -l -f "$ssh_dir/authorized_keys" >/dev/null 2>&1 \
        || die "SSH_AUTHORIZED_KEY is not an OpenSSH public key line"
    [ "$(grep -c . "$ssh_dir/authorized_keys")" = 1 ] \
        || die "SSH_AUTHORIZED_KEY must be exactly one public key line"
    log "authorized key for $login_user: $(ssh-keygen -l -f "$ssh_dir/authorized_keys")"
    # Host keys: fresh at every start, never from the image (the build deletes
    # the ones openssh-server's postinst made). Clients pin them per run.
    rm -f /etc/ssh/ssh_host_*
    ssh-keygen -A >/dev/null
    log "host key $(ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub)"
    install -d -m 0755 /run/sshd
    /usr/sbin/sshd -t || die "sshd config test failed"
}

start_sshd() {
    # -D: foreground, -e: log to stderr (= the container log).
    /usr/sbin/sshd -D -e &
    pids+=($!)
    log "sshd started (pid $!)"
}

# --- Job area (login and nodes) ----------------------------------------------------
work_area() {
    # /work is the shared "work" volume, mounted nocopy (nothing of the image's
    # /work is copied into it), or, on a stack without a shared file system
    # (options.shared_fs: false), each container's own volume: the job area is
    # made here, by every node.
    install -d -o "$login_user" -g "$login_user" -m 0755 /work/jobs
}

# --- The stack's object store, if it has one ------------------------------------------
# Its container makes a CA per run and shares it in this volume (mounted into ctld, the
# nodes and login): trusted like a site's CA on its nodes, so a job's own curl verifies the
# store (the store writes it within a second of starting, beside us). As in stacks/slurm.
store_trust() {
    local store_ca=/run/pytest-stacks/store-trust/ca.crt
    [ -d "${store_ca%/*}" ] || return 0
    for _ in $(seq 1 300); do [ -s "$store_ca" ] && break; sleep 0.1; done
    [ -s "$store_ca" ] || die "the object store never shared its CA ($store_ca)"
    cat "$store_ca" >> /etc/ssl/certs/ca-certificates.crt
    log "trusting the object store's CA"
}

# --- Run -------------------------------------------------------------------------
pids=()
# shellcheck disable=SC2317,SC2329  # called by the trap below (shellcheck 0.9 says SC2317)
stop() {
    log "stopping"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait || true
    exit 0
}
trap stop TERM INT

stream=""
case "$role" in
    ctld)
        slurm_config
        munge_key
        # Log files live on the logs volume as long as the stack instance: a
        # restarted container appends (and streams only the new lines).
        [ -f "$log_dir/slurmctld.log" ] || install -o slurm -g slurm -m 0644 /dev/null "$log_dir/slurmctld.log"
        # The completion log: written by slurmctld, read on the login node (same
        # volume). Kept across ctld restarts of one stack instance; `down -v` ends it.
        [ -f "$log_dir/jobcomp.log" ] || install -o slurm -g slurm -m 0644 /dev/null "$log_dir/jobcomp.log"
        stream=$log_dir/slurmctld.log
        ;;
    node)
        slurm_config
        munge_key
        work_area
        store_trust
        node_name=$(hostname -s)
        touch "$log_dir/slurmd-$node_name.log"
        stream=$log_dir/slurmd-$node_name.log
        ;;
    login)
        slurm_config
        munge_key
        work_area
        ssh_setup
        ;;
    jump)
        # A bastion: sshd only. The image's sudo rule (submitter -> slurm) is
        # for the login node; the jump host gets none.
        rm -f /etc/sudoers.d/pytest-stacks-submitter
        ssh_setup
        ;;
esac

# The role's daemon log goes to stdout through `tail -F` (docker compose logs),
# from the byte where this start begins: what an earlier start of the container
# wrote was streamed then. (A byte offset, not `-n 0`: tail may open the file
# after the daemon's first lines.)
if [ -n "$stream" ]; then
    tail -c "+$(( $(stat -c %s "$stream") + 1 ))" -F "$stream" 2>/dev/null &
    pids+=($!)
fi

case "$role" in
    ctld)
        start_munged
        # Foreground (-D); stderr repeats the log file, so it goes to *.stderr
        # (printed if the daemon dies, e.g. on a config error).
        /usr/sbin/slurmctld -D >/dev/null 2>"/var/lib/slurm/slurmctld.stderr" &
        pids+=($!)
        log "slurmctld started (pid $!)"
        ;;
    node)
        start_munged
        /usr/sbin/slurmd -D -N "$node_name" >/dev/null 2>"/var/lib/slurm/slurmd.stderr" &
        pids+=($!)
        log "slurmd -N $node_name started (pid $!)"
        ;;
    login)
        start_munged
        start_sshd
        ;;
    jump)
        start_sshd
        ;;
esac

# If any daemon exits, stop the container (a broken stack is visible).
set +e
wait -n "${pids[@]}"
rc=$?
log "a daemon exited (status $rc); stopping the container"
tail -n 20 /var/lib/slurm/*.stderr 2>/dev/null
kill -TERM "${pids[@]}" 2>/dev/null
wait
exit "${rc:-1}"
