# shellcheck shell=bash disable=SC2154  # sourced by entrypoint.sh: conf_dir, log_dir and conf are its
# Sourced by entrypoint.sh when the image was built with ACCOUNTING=slurmdbd: starts the
# accounting storage a site keeps beside slurmctld (MariaDB, then slurmdbd) and returns once
# slurmdbd answers, so slurmctld registers with it at its start. Uses the entrypoint's
# log, log_dir, conf_dir and pids.
#
# - MariaDB listens on its socket only (--skip-networking): no TCP port, nothing published.
# - The database user's password is made here at every container start, written only to
#   slurmdbd.conf (0600, owned by slurm) and fed to the SQL client on stdin: it is never in
#   the image, an argv or a log.
# - Logs: mariadb.log and slurmdbd.log beside slurmctld's (the `logs` capability reads
#   /var/log/slurm/*.log); their stderr in *.stderr, shown if a daemon dies.

# The suite's own paths (my.cnf): trixie's MariaDB keeps /run/mysqld, sid's /run/mariadbd.
db_socket=$(my_print_defaults client-server client mysqld mariadbd 2>/dev/null | sed -n 's/^--socket=//p' | tail -n 1)
db_socket=${db_socket:-/run/mysqld/mysqld.sock}
db_pid=$(my_print_defaults mysqld mariadbd 2>/dev/null | sed -n 's/^--pid-file=//p' | tail -n 1)
db_pid=${db_pid:-/run/mysqld/mysqld.pid}
db_name=slurm_acct_db
dbd_conf="$conf_dir/slurmdbd.conf"

# Waits up to $1 tenths of a second for "$3..." to succeed while pid $2 lives; fails at
# once (with the daemon's stderr) if it died.
await() {
    local tenths=$1 pid=$2 what=$3
    shift 3
    for _ in $(seq 1 "$tenths"); do
        "$@" >/dev/null 2>&1 && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            log "$what exited before it answered"
            tail -n 20 "$log_dir"/*.stderr "$log_dir/$what.log" 2>/dev/null || true
            return 1
        fi
        sleep 0.1
    done
    log "$what did not answer within $((tenths / 10)) s"
    return 1
}

start_mariadb() {
    install -d -o mysql -g mysql -m 0755 /run/mysqld "${db_socket%/*}" "${db_pid%/*}"
    install -d -o mysql -g mysql -m 0700 /var/lib/mysql
    if [ ! -d /var/lib/mysql/mysql ]; then
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db \
            --auth-root-authentication-method=socket >"$log_dir/mariadb-install.stderr" 2>&1
    fi
    # Slurm's advice (slurmdbd logs it): snapshot isolation OFF (on by default from MariaDB
    # 11.8; slurmdbd then dies on a write conflict), lock waits of 900 s. "loose-": a
    # MariaDB without the setting ignores it.
    /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql --skip-networking \
        --loose-innodb-snapshot-isolation=OFF --innodb-lock-wait-timeout=900 \
        --socket="$db_socket" --pid-file="$db_pid" --log-error="$log_dir/mariadb.log" \
        >/dev/null 2>"$log_dir/mariadb.stderr" &
    pids+=($!)
    mariadb_pid=$!
    await 600 "$mariadb_pid" mariadb mariadb-admin --socket="$db_socket" ping
    # A client library built with the other suite's default socket finds it too.
    for other in /run/mysqld/mysqld.sock /run/mariadbd/mysqld.sock; do
        if [ "$other" != "$db_socket" ]; then
            install -d -o mysql -g mysql -m 0755 "${other%/*}"
            ln -sf "$db_socket" "$other"
        fi
    done
    log "mariadb (pid $mariadb_pid) answers on $db_socket (no TCP)"
}

# The database and its user, with a password of this start's own.
create_database() {
    local password
    password=$(head -c 48 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9')
    # root connects by unix_socket authentication (the OS user), so no root password exists.
    mariadb --socket="$db_socket" <<SQL
CREATE DATABASE IF NOT EXISTS ${db_name};
CREATE OR REPLACE USER 'slurm'@'localhost' IDENTIFIED BY '${password}';
GRANT ALL ON ${db_name}.* TO 'slurm'@'localhost';
SQL
    (
        umask 077
        cat > "$dbd_conf" <<CONF
# Written by the entrypoint at container start (the password is this start's own).
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
LogFile=$log_dir/slurmdbd.log
PidFile=/run/slurm/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=${db_name}
StorageUser=slurm
StoragePass=${password}
CONF
    )
    chown slurm:slurm "$dbd_conf"
    chmod 0600 "$dbd_conf"
}

start_slurmdbd() {
    /usr/sbin/slurmdbd -D >/dev/null 2>"$log_dir/slurmdbd.stderr" &
    pids+=($!)
    slurmdbd_pid=$!
    # sacctmgr asks slurmdbd (AccountingStorageHost in slurm.conf), which asks the database.
    await 1200 "$slurmdbd_pid" slurmdbd sacctmgr -n show cluster
    log "slurmdbd (pid $slurmdbd_pid) answers sacctmgr"
}

# What a site's admin adds once: the cluster (before slurmctld first registers), an
# account, and the submit user in it.
register() {
    local cluster
    cluster=$(sed -n 's/^ClusterName=//p' "$conf" | head -n 1)
    sacctmgr -i add cluster "$cluster" >/dev/null
    sacctmgr -i add account stacks Description="pytest-stacks" Organization="pytest-stacks" \
        >/dev/null
    sacctmgr -i add user submitter Account=stacks >/dev/null
    log "accounting: cluster $cluster, account stacks, user submitter registered"
}

start_accounting() {
    start_mariadb
    create_database
    start_slurmdbd
    register
}
