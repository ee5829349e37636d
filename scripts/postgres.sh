#!/usr/bin/env bash
# PostgreSQL for the tests: one throwaway server for a whole test run.
#
#   bash scripts/postgres.sh install    # Debian's postgresql, when missing
#   bash scripts/postgres.sh run CMD... # CMD with LOOPWRIGHT_TEST_POSTGRES set,
#                                       # then the server is stopped and deleted
#
# scripts/test.sh sources this file and calls postgres_install, postgres_start
# (which exports LOOPWRIGHT_TEST_POSTGRES, a superuser's URL; each test makes
# a database of its own there) and postgres_stop (also from its EXIT trap).
#
# The server: initdb and postgres as the `postgres` user when run as root (they
# refuse root), in a new directory under $TMPDIR, on a free loopback port,
# with fsync off. postgres runs in the foreground of a background job (not
# daemonised by pg_ctl) with a parent-death signal, so a test run that is
# killed takes it down too; pg_ctl stops it (a fast shutdown). Installing
# does not create or start Debian's default cluster.
set -euo pipefail

# The server of this shell, once started.
POSTGRES_DIR=
POSTGRES_PID=
POSTGRES_RUNAS=()

postgres_bin() {
    if [ -n "${PGBIN:-}" ]; then
        echo "$PGBIN"
        return
    fi
    local newest
    newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$newest" ] && [ -x "$newest/postgres" ] || return 1
    echo "$newest"
}

postgres_install() {
    if postgres_bin >/dev/null; then
        return
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "postgres.sh: PostgreSQL is not installed, and installing it needs root:" >&2
        echo "  apt-get install postgresql (or set PGBIN to a PostgreSQL bin directory)" >&2
        return 1
    fi
    echo "postgres.sh: installing Debian's postgresql (no default cluster)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql-common >/dev/null
    # No cluster of its own: the tests start theirs.
    sed -i 's/^#\?\s*create_main_cluster\s*=.*/create_main_cluster = false/' \
        /etc/postgresql-common/createcluster.conf
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    postgres_bin >/dev/null || { echo "postgres.sh: postgresql installed, but no postgres binary" >&2; return 1; }
}

# Deletes the directories of servers that are gone (a test run that was
# SIGKILLed leaves its directory): no live postmaster, untouched for 10 min.
postgres_sweep() {
    local dir pid
    for dir in "${TMPDIR:-/tmp}"/loopwright-pg.*; do
        [ -d "$dir" ] || continue
        pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            continue
        fi
        if [ -n "$(find "$dir" -maxdepth 0 -mmin +10)" ]; then
            rm -rf "$dir"
        fi
    done
}

postgres_start() {
    local bin port log
    bin=$(postgres_bin) || { echo "postgres.sh: PostgreSQL is not installed (postgres.sh install)" >&2; return 1; }
    postgres_sweep
    POSTGRES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/loopwright-pg.XXXXXX")
    POSTGRES_RUNAS=()
    if [ "$(id -u)" = 0 ]; then
        chown postgres:postgres "$POSTGRES_DIR"
        POSTGRES_RUNAS=(setpriv --reuid=postgres --regid=postgres --init-groups)
    fi
    (cd "$POSTGRES_DIR" && "${POSTGRES_RUNAS[@]}" "$bin/initdb" -D "$POSTGRES_DIR/data" -U postgres -A trust \
        -E UTF8 --no-locale --no-sync >"$POSTGRES_DIR/initdb.log" 2>&1) \
        || { cat "$POSTGRES_DIR/initdb.log" >&2; return 1; }
    for _ in 1 2 3; do
        # A free port; postgres fails at once if another program took it meanwhile.
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        log="$POSTGRES_DIR/server.log"
        (cd "$POSTGRES_DIR" && exec "${POSTGRES_RUNAS[@]}" setpriv --pdeathsig=QUIT -- "$bin/postgres" \
            -D "$POSTGRES_DIR/data" -p "$port" -k "$POSTGRES_DIR" -c listen_addresses=127.0.0.1 \
            -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
            </dev/null >"$log" 2>&1) &
        POSTGRES_PID=$!
        for _ in $(seq 600); do
            if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; then
                export LOOPWRIGHT_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
                echo "postgres.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
                return 0
            fi
            kill -0 "$POSTGRES_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$POSTGRES_PID" 2>/dev/null && break
        wait "$POSTGRES_PID" 2>/dev/null || true
        POSTGRES_PID=
    done
    echo "postgres.sh: the server did not start:" >&2
    cat "$POSTGRES_DIR/server.log" >&2
    postgres_stop
    return 1
}

postgres_stop() {
    local bin
    if [ -n "$POSTGRES_PID" ] && kill -0 "$POSTGRES_PID" 2>/dev/null; then
        bin=$(postgres_bin)
        (cd "$POSTGRES_DIR" && "${POSTGRES_RUNAS[@]}" "$bin/pg_ctl" stop -D "$POSTGRES_DIR/data" -m fast -w -t 60 \
            >/dev/null 2>&1) || kill -QUIT "$POSTGRES_PID" 2>/dev/null || true
        wait "$POSTGRES_PID" 2>/dev/null || true
    fi
    POSTGRES_PID=
    if [ -n "$POSTGRES_DIR" ]; then
        rm -rf "$POSTGRES_DIR"
        POSTGRES_DIR=
    fi
    unset LOOPWRIGHT_TEST_POSTGRES
}

# Run as a script (not sourced).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case "${1:-}" in
        install)
            postgres_install
            ;;
        run)
            shift
            [ $# -gt 0 ] || { echo "usage: postgres.sh run COMMAND [ARGS...]" >&2; exit 2; }
            postgres_install
            trap postgres_stop EXIT
            postgres_start
            status=0
            "$@" || status=$?
            exit "$status"
            ;;
        *)
            echo "usage: postgres.sh install | run COMMAND [ARGS...]" >&2
            exit 2
            ;;
    esac
fi
