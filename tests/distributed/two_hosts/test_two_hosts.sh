#!/usr/bin/env bash
# tests/distributed/two_hosts/test_two_hosts.sh: the GPT example trained data-parallel on two hosts,
# one rank on each, over TCP; then the cable between them cut in the middle of a run.
#
#   test_two_hosts.sh GPT MPIEXEC WORKDIR      (CTest: distributed.two_hosts, label two_hosts)
#
# The hosts are two network namespaces of this machine joined by a veth pair (hosts.sh), and mpirun
# starts a rank in each through a launch agent that enters the namespace (netns_agent.sh).
# It checks:
#   1. 20 steps on the two hosts, every rank's weights compared after every backward
#      (--check-in-sync), the gradients carried over the cable (its byte counter), stopped; resumed
#      from the checkpoint to step 40, on the two hosts again; and the checkpoint it ends with is,
#      byte for byte, that of 40 steps straight through on 2 ranks of one host (shared memory).
#   2. The cable cut (`ip link set ... down`, from outside both hosts) after the first checkpoint:
#      the job ends by itself within 30 s, with a non-zero status; mpirun's message names the lost
#      host, its job map shows rank 1 there, and rank 0 says it was stopped; no process is left on
#      either host. Then the cable mended, the last checkpoint resumes on the two hosts.
# Every run is bounded by `timeout`; the namespaces and whatever runs in them go on every exit.
# Exit status: 0 passed; 1 failed (the check that failed is named, and its log shown); 77 skipped,
# with one line saying why (not root, no network namespaces): with TAPEGRAD_REQUIRE_TWO_HOSTS=1
# (.ci/run) a skip is a failure instead.
set -euo pipefail
if (($# != 3)); then
  echo "usage: test_two_hosts.sh GPT MPIEXEC WORKDIR" >&2
  exit 2
fi
gpt=$1 work=$3
HOSTS_MPIEXEC=$2 HOSTS_DIR=$work
source "$(dirname "$0")/hosts.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

fail() {  # fail MESSAGE [LOG]
  echo "FAILED: $1" >&2
  if [[ -n ${2:-} && -f $2 ]]; then
    echo "--- the last lines of $2:" >&2
    tail -n 40 "$2" >&2
  fi
  exit 1
}
note() { echo "two_hosts: $*"; }
expect() { grep -Eq -- "$2" "$1" || fail "$3" "$1"; }  # expect LOG PATTERN MESSAGE

trap hosts_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
[[ -x $gpt ]] || fail "no GPT example at $gpt (build the target gpt)"
rm -rf "$work"
mkdir -p "$work"
status=0
hosts_up || status=$?
if ((status == 77)) && [[ ${TAPEGRAD_REQUIRE_TWO_HOSTS:-0} == 1 ]]; then
  fail "TAPEGRAD_REQUIRE_TWO_HOSTS=1, and this test could not make its hosts (above)"
fi
((status == 0)) || exit "$status"
note "hosts $HOST_A (10.47.0.1) and $HOST_B (10.47.0.2), joined by $CABLE_A - $CABLE_B"

# A small text in the fortune format (the same for every run of this test).
awk 'BEGIN { srand(7); split("the cat sat on a mat and dog ran far away home", w, " ");
             for (e = 0; e < 400; ++e) { n = 3 + int(rand() * 6); line = "";
               for (i = 0; i < n; ++i) line = line (i ? " " : "") w[1 + int(rand() * 12)];
               print line "."; print "%" } }' > "$work/corpus.txt"
tiny=(--data "$work/corpus.txt" --n-layer 1 --n-head 2 --n-embd 32 --block-size 32 --batch-size 8
      --warmup 5 --eval-windows 32 --sample-tokens 0)

# run LOG LIMIT COMMAND...: COMMAND's output into LOG; rc is its exit status (124: killed after
# LIMIT s).
run() {
  local log=$1 limit=$2
  shift 2
  rc=0
  HOSTS_TIMEOUT=$limit "$@" > "$log" 2>&1 || rc=$?
}
bounded() { timeout -k 5 "$HOSTS_TIMEOUT" "$@"; }  # for a command that is not hosts_mpirun

# ---- 1. trained on two hosts, stopped, resumed; the bits of one host ----
args=("${tiny[@]}" --steps 40 --eval-every 10 --out "$work/two_hosts")
sent_before=$(cable_tx_bytes)
run "$work/first.log" 60 hosts_mpirun "$gpt" "${args[@]}" --check-in-sync --stop-after 20
((rc == 0)) || fail "20 steps on two hosts: exit status $rc" "$work/first.log"
expect "$work/first.log" "batch 8 per rank x 2 ranks" "the job did not run 2 ranks"
expect "$work/first.log" "stopped after step 20" "the first run did not stop after step 20"
params=$(sed -n 's/.*, \([0-9]*\) parameters.*/\1/p' "$work/first.log")
sent=$(($(cable_tx_bytes) - sent_before))
# Each step, rank 0 sends its 4-byte gradients, all of them, to rank 1 (a ring of 2 sends half and
# receives half twice); anything less means the ranks did not talk over the cable.
((sent >= 20 * 4 * params)) ||
  fail "host A sent $sent bytes over the cable in 20 steps, less than their gradients'\
 $((20 * 4 * params))"
note "20 steps on two hosts, ranks in sync after every backward; host A sent $sent bytes" \
     "over the cable"

run "$work/second.log" 60 hosts_mpirun "$gpt" "${args[@]}" --check-in-sync --resume
((rc == 0)) || fail "resuming on two hosts: exit status $rc" "$work/second.log"
expect "$work/second.log" "resumed at step 20" "the second run did not resume at step 20"
expect "$work/second.log" "gpt result: steps=40 " "the second run did not reach step 40"

run "$work/one_host.log" 60 bounded "$HOSTS_MPIEXEC" -np 2 --allow-run-as-root --oversubscribe \
  "$gpt" "${tiny[@]}" --steps 40 --eval-every 10 --out "$work/one_host"
((rc == 0)) || fail "40 steps on 2 ranks of one host: exit status $rc" "$work/one_host.log"
cmp -s "$work/two_hosts/last.safetensors" "$work/one_host/last.safetensors" ||
  fail "the checkpoint of two hosts (stopped at 20, resumed) differs from one host's\
 (straight to 40)"
note "resumed at step 20 to 40; its checkpoint is byte for byte that of one host straight through"

# ---- 2. the cable cut mid-run ----
cut_args=("${tiny[@]}" --steps 20000 --eval-every 10 --out "$work/cut")
HOSTS_TIMEOUT=90 hosts_mpirun --display-map "$gpt" "${cut_args[@]}" > "$work/cut.log" 2>&1 &
job=$!
for _ in $(seq 600); do  # the first checkpoint, within 60 s
  [[ -f $work/cut/last.safetensors ]] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
[[ -f $work/cut/last.safetensors ]] || fail "no checkpoint within 60 s of the start" "$work/cut.log"
sleep 1  # in the middle of a step, with gradients on the way
cable_down
cut_at=$(date +%s.%N)
rc=0
wait "$job" || rc=$?
seconds=$(awk -v a="$cut_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
((rc != 124 && rc != 137)) || fail "the job did not end within 90 s of its start" "$work/cut.log"
((rc != 0)) || fail "the job with its cable cut exited with status 0" "$work/cut.log"
awk -v s="$seconds" 'BEGIN { exit !(s <= 30) }' ||
  fail "the job ended $seconds s after the cable was cut (limit 30 s)" "$work/cut.log"
expect "$work/cut.log" "ORTE has lost communication with a remote daemon" \
  "mpirun did not say it lost a host"
expect "$work/cut.log" "Remote daemon: .* on node $HOST_B\$" \
  "mpirun's message does not name the lost host $HOST_B"
# The job map (--display-map): which rank ran on the lost host.
lost_rank=$(awk -v host="$HOST_B" '$0 ~ "Data for node: " host "[ \t]" { on = 1; next }
                                   on && /Process rank:/ { sub(/.*Process rank: /, "");
                                                           sub(/ .*/, ""); print; exit }' \
            "$work/cut.log")
[[ $lost_rank == 1 ]] ||
  fail "the job map does not show rank 1 on $HOST_B (found '$lost_rank')" "$work/cut.log"
# (mpirun stops the ranks it still reaches with SIGTERM, then SIGKILL: rank 0, waiting for rank 1
# in a collective, says it got the signal and is killed before its step ends.)
expect "$work/cut.log" "gpt rank 0 of 2 \(pid [0-9]+\): SIGTERM: stopping after the current step" \
  "rank 0 did not say it was stopped"
note "cable cut: the job ended $seconds s later with status $rc; mpirun lost $HOST_B," \
     "where rank 1 ran"
# The lost host's daemon and rank end by themselves once they lose mpirun: nothing is left behind.
for _ in $(seq 200); do
  [[ -z $(ip netns pids "$HOST_A")$(ip netns pids "$HOST_B") ]] && break
  sleep 0.1
done
[[ -z $(ip netns pids "$HOST_B") ]] ||
  fail "processes still run on the lost host 20 s after the job ended:\
 $(ip netns pids "$HOST_B" | xargs)"
[[ -z $(ip netns pids "$HOST_A") ]] ||
  fail "processes still run on host A 20 s after the job ended: $(ip netns pids "$HOST_A" | xargs)"

# The last checkpoint resumes, on both hosts again. It was written after the last step the log
# shows validated, or 10 steps later if the cut came between the save and its line.
cable_up
# (Under mpirun, stdout is a terminal: the progress line is redrawn with \r, so one line of the
# log may hold several.)
shown=$(grep -ao 'step [0-9]*: validation loss' "$work/cut.log" | tail -n 1 | tr -dc '0-9')
stop=$((shown + 20))
run "$work/resumed.log" 60 hosts_mpirun "$gpt" "${cut_args[@]}" --resume --stop-after "$stop"
((rc == 0)) || fail "resuming after the cut: exit status $rc" "$work/resumed.log"
expect "$work/resumed.log" "batch 8 per rank x 2 ranks" "the job did not run 2 ranks"
resumed=$(sed -n 's/.*resumed at step \([0-9]*\).*/\1/p' "$work/resumed.log")
[[ $resumed == "$shown" || $resumed == "$((shown + 10))" ]] ||
  fail "resumed at step '${resumed}', expected $shown or $((shown + 10))" "$work/resumed.log"
expect "$work/resumed.log" "stopped after step $stop" "the resumed run did not reach step $stop"
note "cable mended: the run resumed at step $resumed on the two hosts and went on to step $stop"
