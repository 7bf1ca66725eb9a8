# tests/distributed/two_hosts/hosts.sh: two hosts on this machine, joined by a cable, for Open MPI
# over TCP. Sourced (bash) by test_two_hosts.sh and measure_two_hosts.sh.
#
# Each host is a network namespace: interfaces, addresses, routes and a TCP stack of its own, with
# the machine's files and programs. A veth pair is the cable: host A has 10.47.0.1/30 on its end,
# host B 10.47.0.2/30 on the other, and each has its loopback up (mpirun and its daemons also talk
# to themselves over TCP). Nothing outside the two namespaces sees that subnet, so it cannot clash
# with the machine's own networks.
#
#   hosts_up              makes them, named after this shell's pid (tapegrad-2h-<pid>-a, -b); when
#                         this machine cannot (not root, no `ip`, no namespaces or veth), returns 77
#                         after one line saying why
#   hosts_down            ends every process still inside them and deletes them (the callers trap
#                         EXIT; deleting a namespace deletes its end of the cable, and so the other)
#   hosts_mpirun ARGS...  Open MPI's mpirun, from host A, one rank on each host (below), killed
#                         after HOSTS_TIMEOUT seconds (120 unless set; status 124 then)
#   cable_down, cable_up  cut and mend the cable, from outside both hosts
#
# Needs: HOSTS_MPIEXEC (mpirun, Open MPI), HOSTS_DIR (a folder for the hostfile).

HOSTS_SUBNET=10.47.0.0/30
HOSTS_PREFIX=tapegrad-2h
HOSTS_AGENT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/netns_agent.sh
HOSTS_RANKFILE=""  # set: ranks placed and bound by this rankfile instead (measure_two_hosts.sh)
HOST_A="" HOST_B="" CABLE_A=cable-a CABLE_B=cable-b MAC_A="" MAC_B=""

# One line on stderr saying why, then status 77 (CTest's SKIP_RETURN_CODE for these tests).
hosts_cannot() {
  echo "two hosts cannot be made here, so this is skipped: $*" >&2
  return 77
}

# Namespaces (and temporary directories) an earlier run left behind when it was killed outright
# (SIGKILL: no trap runs), found by the pid in their names no longer running.
hosts_sweep_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $ns =~ ^${HOSTS_PREFIX}-([0-9]+)-[ab]$ ]] || continue
    pid=${BASH_REMATCH[1]}
    kill -0 "$pid" 2>/dev/null && continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  local dir
  for dir in /tmp/"$HOSTS_PREFIX"-*; do
    [[ $dir =~ ^/tmp/${HOSTS_PREFIX}-([0-9]+)-(a|b|mpirun)$ ]] || continue
    kill -0 "${BASH_REMATCH[1]}" 2>/dev/null || rm -rf "$dir"
  done
}

hosts_up() {
  if [[ $EUID -ne 0 ]]; then
    hosts_cannot "network namespaces need root (.ci/run runs this as root)"
    return
  fi
  command -v ip >/dev/null || { hosts_cannot "no 'ip' command (Debian's iproute2)"; return; }
  if ! "$HOSTS_MPIEXEC" --version 2>/dev/null | grep -Eq "Open MPI|OpenRTE"; then
    hosts_cannot "$HOSTS_MPIEXEC is not Open MPI's mpirun (the launch agent is Open MPI's)"
    return
  fi
  hosts_sweep_stale
  local err ns
  for ns in a b; do
    if ! err=$(ip netns add "$HOSTS_PREFIX-$$-$ns" 2>&1); then
      hosts_cannot "'ip netns add' failed: $err"
      return
    fi
    if [[ $ns == a ]]; then HOST_A=$HOSTS_PREFIX-$$-a; else HOST_B=$HOSTS_PREFIX-$$-b; fi
  done
  # Both ends are made inside their namespaces, so their names cannot clash with the machine's.
  if ! err=$(ip link add "$CABLE_A" netns "$HOST_A" type veth \
                     peer name "$CABLE_B" netns "$HOST_B" 2>&1); then
    hosts_cannot "a veth pair cannot be made: $err"
    return
  fi
  MAC_A=$(ip netns exec "$HOST_A" cat "/sys/class/net/$CABLE_A/address") &&
    MAC_B=$(ip netns exec "$HOST_B" cat "/sys/class/net/$CABLE_B/address") &&
    ip -n "$HOST_A" addr add 10.47.0.1/30 dev "$CABLE_A" &&
    ip -n "$HOST_B" addr add 10.47.0.2/30 dev "$CABLE_B" &&
    ip -n "$HOST_A" link set lo up && ip -n "$HOST_B" link set lo up &&
    ip -n "$HOST_B" link set "$CABLE_B" up && cable_up || return 1
  # Hosts are named after their namespaces: netns_agent.sh enters the one mpirun names.
  printf '%s slots=1\n%s slots=1\n' "$HOST_A" "$HOST_B" > "$HOSTS_DIR/hostfile"
}

hosts_down() {
  local ns
  for ns in "$HOST_A" "$HOST_B"; do
    [[ -n $ns ]] || continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/tmp/$ns"  # its temporary directory (netns_agent.sh)
  done
  rm -rf "/tmp/$HOSTS_PREFIX-$$-mpirun"
  HOST_A="" HOST_B=""
}

cable_down() { ip -n "$HOST_A" link set "$CABLE_A" down; }

# Up, and carrying: Open MPI ignores an interface that is not up when it starts. Each host then
# knows the other's MAC address for good (a permanent neighbour entry; taking the link down
# deletes host A's): on a cable there is nothing else to learn. Without them, an ARP resolution
# the cut had made fail outlived the mending, and a daemon started then could not reach mpirun
# (EHOSTUNREACH) in about 1 start in 10 here.
cable_up() {
  ip -n "$HOST_A" link set "$CABLE_A" up || return 1
  local i
  for i in $(seq 50); do
    if ip -n "$HOST_A" link show "$CABLE_A" | grep -q LOWER_UP &&
      ip -n "$HOST_B" link show "$CABLE_B" | grep -q LOWER_UP; then
      ip -n "$HOST_A" neigh replace 10.47.0.2 lladdr "$MAC_B" dev "$CABLE_A" nud permanent &&
        ip -n "$HOST_B" neigh replace 10.47.0.1 lladdr "$MAC_A" dev "$CABLE_B" nud permanent
      return
    fi
    sleep 0.1
  done
  echo "the cable between $HOST_A and $HOST_B did not come up within 5 s" >&2
  return 1
}

# Bytes host A has sent over the cable (its namespace's /sys, which `ip netns exec` mounts).
cable_tx_bytes() { ip netns exec "$HOST_A" cat "/sys/class/net/$CABLE_A/statistics/tx_bytes"; }

# mpirun on host A, as a user logged in there would start it. Every host in the hostfile is
# "remote" to mpirun (none has this machine's name), so it starts a daemon on each through the
# agent and runs no rank itself. The flags, and why:
#   --allow-run-as-root --oversubscribe  as the other distributed tests (root; 2 cores)
#   --hostfile, --map-by node --bind-to none  a rank on each host, unbound: both hosts have this
#                          machine's cores, and each daemon would bind its rank to core 0
#                          (with HOSTS_RANKFILE: --rankfile, which names each rank's host and core)
#   plm_rsh_agent netns_agent.sh  instead of ssh: enters the host's namespace (see the agent)
#   plm_rsh_no_tree_spawn 1  mpirun starts both daemons itself (no daemon starts another)
#   orte_leave_session_attached 1  each daemon stays the agent's child, not a daemon in a session of
#                          its own: mpirun learns from the agent's exit status that a daemon failed
#                          to start (a detached one that died left mpirun waiting, once in about 60
#                          starts), its messages reach the job's output, and its rank shares the
#                          CPU with the rest of the job on a busy machine (Linux groups a session's
#                          processes for CPU shares: detached, the two hosts' ranks got two shares
#                          and ran faster than the one host's, which got one)
#   btl tcp,self           ranks talk over TCP only: no shared memory between "hosts", though
#                          they share the machine's /dev/shm
#   btl_tcp_if_include, oob_tcp_if_include  the cable's subnet, for the ranks' data and for the
#                          control channel between mpirun and its daemons
#   oob_tcp_keepalive_time 2, _intvl 1, _probes 3  how a lost host is noticed. The control
#       channel is idle while the ranks train, and only TCP keepalives notice that its other end
#       has gone: by default after 300 s idle and 9 probes 20 s apart. Then mpirun says "ORTE has
#       lost communication with a remote daemon ... on node <host>" and ends the job. Nothing else
#       ends it soon: the ranks' TCP connections retransmit for about 15 minutes
#       (net.ipv4.tcp_retries2), and tapegrad's collectives wait distributed::timeout(), 30 minutes
#       by default.
#   -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS  as ssh would not pass the environment on
# mpirun, too, has a temporary directory of its own (TMPDIR), apart from the daemons' (the agent's).
# The machine's own PATH finds orted on both hosts (one filesystem), so no --prefix is needed.
hosts_mpirun() {
  local placement=(--hostfile "$HOSTS_DIR/hostfile" --map-by node --bind-to none)
  [[ -z $HOSTS_RANKFILE ]] || placement=(--rankfile "$HOSTS_RANKFILE")
  local tmp=/tmp/$HOSTS_PREFIX-$$-mpirun
  mkdir -p "$tmp"
  TMPDIR=$tmp timeout -k 5 "${HOSTS_TIMEOUT:-120}" ip netns exec "$HOST_A" \
    "$HOSTS_MPIEXEC" -np 2 --allow-run-as-root --oversubscribe "${placement[@]}" \
    --mca plm_rsh_agent "$HOSTS_AGENT" --mca plm_rsh_no_tree_spawn 1 \
    --mca orte_leave_session_attached 1 \
    --mca btl tcp,self \
    --mca btl_tcp_if_include "$HOSTS_SUBNET" --mca oob_tcp_if_include "$HOSTS_SUBNET" \
    --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 \
    --mca oob_tcp_keepalive_probes 3 \
    -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS "$@"
}
