#!/usr/bin/env bash
# A one-host Slurm (munged, slurmctld, slurmd) for the tier-slurm tests, from slurm.conf here.
#
#   tests/slurm/cluster.sh install   # apt-get install slurm-wlm munge, if missing (root only)
#   tests/slurm/cluster.sh start     # write RUN/slurm.conf, start the daemons, wait for the node
#   tests/slurm/cluster.sh stop      # stop the daemons this script started, by their PIDs
#   tests/slurm/cluster.sh test PYTHON   # install, start, pytest -m slurm with PYTHON, stop
#
# RUN is $PGMPI_SLURM_RUN (default /tmp/pgmpi-slurm); clients need SLURM_CONF=RUN/slurm.conf.
# Each command prints "skipped: REASON" and exits 3 when this machine cannot do it (not
# root, no apt-get, a daemon that does not start); `test` then exits 0, so the tier is skipped
# (and says so) instead of failing CI on a machine where Slurm cannot run.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
RUN="${PGMPI_SLURM_RUN:-/tmp/pgmpi-slurm}"
CTLD_PORT="${PGMPI_SLURM_PORT:-16817}"

skip() { echo "skipped: $*"; exit 3; }

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v srun >/dev/null; then
        return 0
    fi
    [ "$(id -u)" = 0 ] || skip "Slurm is not installed and installing it needs root"
    command -v apt-get >/dev/null || skip "Slurm is not installed and there is no apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed (no network?)"
    apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 \
        || skip "apt-get install slurm-wlm munge failed"
}

wait_for() {  # wait_for SECONDS COMMAND...: true once COMMAND succeeds
    local until=$((SECONDS + $1)); shift
    while ! "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$until" ] || return 1
        sleep 0.5
    done
}

node_idle() { sinfo -h -N -o %t | grep -qx idle; }

start() {
    [ "$(id -u)" = 0 ] || skip "starting slurmd and munged needs root"
    command -v slurmctld >/dev/null || skip "no slurmctld (run: $0 install)"
    if [ -n "${SLURM_JOB_ID:-}" ] || { pgrep -x slurmd && ! [ -f "$RUN/slurmd.pid" ]; } >/dev/null
    then
        skip "this machine already runs Slurm (a slurmd or this job); not starting a second one"
    fi
    stop >/dev/null 2>&1
    rm -rf "$RUN" && mkdir -p "$RUN/state" "$RUN/spool" && chmod 700 "$RUN"
    local host cpus
    host="$(hostname -s)"
    cpus="$(nproc --all)"
    sed -e "s|@HOST@|$host|g" -e "s|@CPUS@|$cpus|g" -e "s|@RUN@|$RUN|g" \
        -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@D_PORT@|$((CTLD_PORT + 1))|g" \
        "$HERE/slurm.conf" >"$RUN/slurm.conf"
    export SLURM_CONF="$RUN/slurm.conf"
    # Our own munged on its own socket and key, so a site's munged is neither used nor touched.
    dd if=/dev/urandom of="$RUN/munge.key" bs=1024 count=1 status=none
    chmod 400 "$RUN/munge.key"
    munged --force --socket="$RUN/munge.socket" --key-file="$RUN/munge.key" \
        --pid-file="$RUN/munged.pid" --log-file="$RUN/munged.log" \
        --seed-file="$RUN/munged.seed" \
        || skip "munged did not start: $(tail -n 3 "$RUN/munged.log" 2>/dev/null)"
    slurmctld -f "$SLURM_CONF" || skip "slurmctld did not start"
    slurmd -f "$SLURM_CONF" || skip "slurmd did not start"
    if ! wait_for 60 node_idle; then
        local why
        why="$(tail -n 5 "$RUN/slurmd.log" "$RUN/slurmctld.log" 2>/dev/null)"
        stop >/dev/null 2>&1
        skip "the node did not come up within 60 s: $why"
    fi
    echo "slurm: $host, $cpus CPUs, SLURM_CONF=$SLURM_CONF"
}

stop() {
    local name pid
    for name in slurmd slurmctld munged; do
        [ -f "$RUN/$name.pid" ] || continue
        pid="$(cat "$RUN/$name.pid")"
        if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
            wait_for 15 bash -c "! kill -0 $pid" || kill -9 "$pid" 2>/dev/null
        fi
        rm -f "$RUN/$name.pid"
    done
}

run_tests() {  # run_tests PYTHON: the tier, with the daemons stopped however it ends
    local python="$1" status
    ( install ) || return 0
    ( start ) || { stop >/dev/null 2>&1; return 0; }
    trap 'stop' EXIT
    SLURM_CONF="$RUN/slurm.conf" timeout 900 "$python" -m pytest -q -rs -p no:cacheprovider \
        -m slurm "$HERE/.."
    status=$?
    return "$status"
}

case "${1:-}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    test) run_tests "${2:?usage: $0 test PYTHON}" ;;
    *) echo "usage: $0 install|start|stop|test PYTHON" >&2; exit 2 ;;
esac
