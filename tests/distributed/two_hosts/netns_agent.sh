#!/bin/sh
# tests/distributed/two_hosts/netns_agent.sh: Open MPI's launch agent for hosts that are network
# namespaces of this machine, used in place of ssh (`mpirun --mca plm_rsh_agent netns_agent.sh`).
#
# mpirun starts its daemon (orted) on each remote host as `<agent> <host> <command words...>`, the
# words quoted for a shell on the far side, as `ssh host command` would get them. The hosts of
# hosts.sh's hostfile are named after their namespaces, so this enters the one named and hands
# the command to a shell there, as sshd would. The daemon then lives in that namespace (its
# network: the loopback and its end of the veth pair), and so do the ranks it starts.
set -eu
host=${1:?"netns_agent.sh: expected a host (a network namespace) and a command"}
shift
case "$host" in
  */* | .* | -*) found=no ;;
  *) if [ -e "/run/netns/$host" ]; then found=yes; else found=no; fi ;;
esac
if [ "$found" = no ]; then
  echo "netns_agent.sh: no network namespace named '$host' (the hostfile names the" \
       "namespaces that tests/distributed/two_hosts/hosts.sh makes)" >&2
  exit 255  # what ssh returns when it cannot reach the host
fi
# A temporary directory of the host's own, as a separate machine has: Open MPI makes its session
# directory (ompi.<hostname>.<uid>/...) there, and these hosts share the machine's hostname and
# /tmp. Shared, the daemons and mpirun raced to create the same directories, and in about 1 start
# in 30 a daemon failed ("A call to mkdir was unable to create the desired directory ... File
# exists").
TMPDIR=/tmp/$host
mkdir -p "$TMPDIR"
export TMPDIR
exec ip netns exec "$host" /bin/sh -c "$*"
