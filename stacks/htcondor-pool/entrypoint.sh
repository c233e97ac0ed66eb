#!/bin/bash
# Entrypoint of the pytest-stacks split HTCondor pool. One image, one role per container,
# chosen by the first argument (the compose `command`):
#   cm       condor_master: collector + negotiator; makes the stack's pool key
#   submit   condor_master: schedd; and sshd, the login node for `submitter`
#   execute  condor_master: startd (two static slots)
# Every role writes its role config, installs the pool key from the key volume, then runs
# its daemons in the foreground as children of this script; the container stops if one
# of them exits.
set -euo pipefail

key_dir=/run/pytest-stacks/pool-key
login_user=submitter
role=${1:-}
log() { echo "[entrypoint:${role:-?}] $*"; }
die() { log "FATAL: $*" >&2; exit 1; }

case "$role" in
    cm|submit|execute) ;;
    *) die "usage: entrypoint.sh cm|submit|execute (got '${role}')" ;;
esac
install -d -m 0755 /run/pytest-stacks
echo "$role" > /run/pytest-stacks/role

# --- HTCondor runtime directories (left to systemd-tmpfiles by the Debian package) -------
host=$(hostname -s)
install -d -o condor -g condor -m 0755 /var/run/condor /var/lock/condor /var/log/condor \
    "/var/log/condor/$host" /var/spool/condor /var/lib/condor /var/lib/condor/execute
install -d -o root -g root -m 0700 /etc/condor/passwords.d /etc/condor/tokens.d

# --- role ---------------------------------------------------------------------------------
case "$role" in
    cm) printf 'use ROLE: CentralManager\n' ;;
    submit) printf 'use ROLE: Submit\n' ;;
    execute)
        printf '%s\n' 'use ROLE: Execute' 'use POLICY: Always_Run_Jobs' \
            '# Two static slots of one CPU each, independent of the host.' \
            'NUM_CPUS = 2' 'MEMORY = 2048' 'NUM_SLOTS = 2'
        ;;
esac > /etc/condor/config.d/60-role.conf

# --- pool key: one per stack instance, never in the image ---------------------------------
# cm writes 48 random bytes (base64) to the key volume when it holds none yet (the first
# start of this stack instance); submit and execute wait for it (read-only mount). Every
# role stores it as the pool password / token signing key (passwords.d/POOL).
if [ "$role" = cm ]; then
    if [ ! -s "$key_dir/pool.key" ]; then
        head -c 48 /dev/urandom | base64 -w0 > "$key_dir/.pool.key.new"
        chmod 0400 "$key_dir/.pool.key.new"
        mv -f "$key_dir/.pool.key.new" "$key_dir/pool.key"  # atomic: never half a key
        log "fresh pool key written to the key volume"
    else
        log "pool key of this stack instance found in the key volume"
    fi
else
    for i in $(seq 1 600); do
        [ -s "$key_dir/pool.key" ] && break
        [ "$i" = 1 ] && log "waiting for cm's pool key in $key_dir"
        sleep 0.1
    done
    [ -s "$key_dir/pool.key" ] || die "no pool key in $key_dir after 60 s (is cm up?)"
fi
rm -f /etc/condor/passwords.d/POOL
condor_store_cred add -c -i - < "$key_dir/pool.key" >/dev/null \
    || die "condor_store_cred could not store the pool key"
log "pool key installed"

# --- ssh (submit = login node) -------------------------------------------------------------
ssh_setup() {
    [ -n "${SSH_AUTHORIZED_KEY:-}" ] \
        || die "SSH_AUTHORIZED_KEY is empty: set it to the OpenSSH public key line of the client"
    local home ssh_dir
    home=$(getent passwd "$login_user" | cut -d: -f6)
    ssh_dir="$home/.ssh"
    install -d -o "$login_user" -g "$login_user" -m 0700 "$ssh_dir"
    printf '%s\n' "$SSH_AUTHORIZED_KEY" > "$ssh_dir/authorized_keys"
    chown "$login_user:$login_user" "$ssh_dir/authorized_keys"
    chmod 0600 "$ssh_dir/authorized_keys"
    ssh-keygen -l -f "$ssh_dir/authorized_keys" >/dev/null 2>&1 \
        || die "SSH_AUTHORIZED_KEY is not an OpenSSH public key line"
    [ "$(grep -c . "$ssh_dir/authorized_keys")" = 1 ] \
        || die "SSH_AUTHORIZED_KEY must be exactly one public key line"
    log "authorized key for $login_user: $(ssh-keygen -l -f "$ssh_dir/authorized_keys")"
    # Host keys: fresh at every start, never from the image. Clients pin them per run.
    rm -f /etc/ssh/ssh_host_*
    ssh-keygen -A >/dev/null
    log "host key $(ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub)"
    install -d -m 0755 /run/sshd
    /usr/sbin/sshd -t || die "sshd config test failed"
}

pids=()
# shellcheck disable=SC2317,SC2329  # called by the trap below (shellcheck 0.9 says SC2317)
stop() {
    log "stopping"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait || true
    exit 0
}
trap stop TERM INT

# The login user's IDTOKEN (submit only), as a site hands one to its users: signed here with
# the pool key, for submitter@pytest-stacks.test. Local commands (condor_submit, condor_q,
# condor_rm ... against this schedd) authenticate by FS anyway; the token is what lets the
# user's read-only queries of the central manager (condor_status) authenticate.
user_token() {
    local home dir
    home=$(getent passwd "$login_user" | cut -d: -f6)
    dir="$home/.condor/tokens.d"
    install -d -o "$login_user" -g "$login_user" -m 0700 "$home/.condor" "$dir"
    rm -f "$dir/pool"
    condor_token_create -identity "$login_user@pytest-stacks.test" -token pool >/dev/null \
        || die "condor_token_create failed"
    # condor_token_create -token writes to root's token directory; move it to the user's.
    mv /etc/condor/tokens.d/pool "$dir/pool"
    chown "$login_user:$login_user" "$dir/pool"
    chmod 0600 "$dir/pool"
    log "IDTOKEN for $login_user@pytest-stacks.test in $dir"
}

if [ "$role" = submit ]; then
    user_token
    ssh_setup
    /usr/sbin/sshd -D -e &
    pids+=($!)
    log "sshd started (pid $!)"
fi

# This host's daemon logs also go to `docker compose logs`.
if [ "${CONDOR_LOGS_TO_STDOUT:-1}" = 1 ]; then
    ( cd "/var/log/condor/$host" && exec tail -n 0 -F MasterLog CollectorLog NegotiatorLog \
        SchedLog ShadowLog StartLog StarterLog 2>/dev/null ) &
    pids+=($!)
fi

condor_master -f &
pids+=($!)
log "condor_master started (pid $!)"

set +e
wait -n "${pids[@]}"
rc=$?
log "a daemon exited (status $rc); stopping the container"
kill -TERM "${pids[@]}" 2>/dev/null
wait
exit "${rc:-1}"
