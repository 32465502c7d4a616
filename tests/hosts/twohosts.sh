#!/usr/bin/env bash
# Two (or more) "hosts" on one Linux machine, for testing pgmpi over real TCP.
#
#     tests/hosts/twohosts.sh up [N]     # make hosts 1..N (default 2); prints the host names
#     tests/hosts/twohosts.sh down       # remove them (and anything left running inside)
#     tests/hosts/twohosts.sh check      # exit 0 if this machine can make them (root, ip, unshare)
#     mpiexec -launcher ssh -launcher-exec tests/hosts/twohosts.sh -localhost 10.77.0.1 \
#         -hosts pgmpi-h1:2,pgmpi-h2:2 -n 4 python ...
#
# Each host is a network namespace (ip netns) with its own veth link to a bridge in the root
# namespace, and runs its processes in a fresh UTS namespace whose hostname is the host's
# name, so MPICH sees different nodes and its ranks talk over TCP, not shared memory. The
# root namespace has 10.77.0.1 on the bridge, so hydra's proxies can connect back to
# mpiexec (-localhost 10.77.0.1). Called with anything else as its first argument, the
# script is hydra's "ssh": `twohosts.sh [ssh options] HOST COMMAND...` runs COMMAND inside
# HOST. PGMPI_HOSTS_PREFIX (default pgmpi-h) and PGMPI_HOSTS_NET (default 10.77.0) let two
# set-ups live side by side.
set -euo pipefail

PREFIX=${PGMPI_HOSTS_PREFIX:-pgmpi-h}
NET=${PGMPI_HOSTS_NET:-10.77.0}
BRIDGE=${PREFIX}br
STATE=/run/${PREFIX}.hosts  # the host names made by `up`, one per line

hosts() { [ -f "$STATE" ] && cat "$STATE" || true; }

up() {
    local n=${1:-2}
    down >/dev/null 2>&1 || true
    ip link add "$BRIDGE" type bridge
    ip addr add "$NET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    : >"$STATE"
    for i in $(seq 1 "$n"); do
        local h=$PREFIX$i
        ip netns add "$h"
        ip link add "${h}v" type veth peer name eth0 netns "$h"
        ip link set "${h}v" master "$BRIDGE" up
        ip -n "$h" addr add "$NET.$((10 + i))/24" dev eth0
        ip -n "$h" link set eth0 up
        ip -n "$h" link set lo up
        echo "$h" >>"$STATE"
    done
    # Every host resolves every host's name (ip netns exec mounts /etc/netns/NAME/hosts).
    for h in $(hosts); do
        mkdir -p "/etc/netns/$h"
        {
            echo "127.0.0.1 localhost"
            echo "$NET.1 ${PREFIX}root"
            local i=1
            for g in $(hosts); do echo "$NET.$((10 + i)) $g"; i=$((i + 1)); done
        } >"/etc/netns/$h/hosts"
    done
    hosts
}

down() {
    for h in $(hosts) $(ip netns list | awk -v p="$PREFIX" 'index($1, p) == 1 {print $1}'); do
        # End what still runs inside (a cut-off host's ranks), by pid, then the namespace.
        for pid in $(ip netns pids "$h" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$h" 2>/dev/null || true
        ip link del "${h}v" 2>/dev/null || true
        rm -rf "/etc/netns/$h"
    done
    ip link del "$BRIDGE" 2>/dev/null || true
    rm -f "$STATE"
}

check() {
    [ "$(id -u)" = 0 ] || { echo "not root"; return 1; }
    for tool in ip unshare nsenter hostname; do
        command -v "$tool" >/dev/null || { echo "no $tool (apt-get install iproute2 util-linux)"; return 1; }
    done
    local probe=${PREFIX}probe
    ip netns add "$probe" 2>/dev/null || { echo "network namespaces refused"; return 1; }
    local ok=0
    ip netns exec "$probe" unshare --uts true 2>/dev/null || ok=1
    ip netns del "$probe"
    [ "$ok" = 0 ] || { echo "UTS namespaces refused"; return 1; }
    ip link add "${probe}b" type bridge 2>/dev/null || { echo "cannot make a bridge"; return 1; }
    ip link del "${probe}b"
}

# hydra's ssh: skip ssh options, take the host, run the rest of the line there.
launch() {
    while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
    local h=$1
    shift
    exec ip netns exec "$h" unshare --uts sh -c 'hostname "$0" && exec sh -c "$*"' "$h" "$@"
}

case "${1:-}" in
up) shift; up "$@" ;;
down) down ;;
check) check ;;
hosts) hosts ;;
*) launch "$@" ;;
esac
