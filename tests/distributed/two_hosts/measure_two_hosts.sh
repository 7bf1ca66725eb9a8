#!/usr/bin/env bash
# tests/distributed/two_hosts/measure_two_hosts.sh: the GPT example's step time on 2 ranks of one
# host against 2 ranks on two hosts (hosts.sh: network namespaces joined by a veth pair). Root only.
#
#   measure_two_hosts.sh [--rounds N] [--steps S] GPT MPIEXEC WORKDIR [-- GPT FLAGS...]
#
# Three configurations, run in turn (A B C A B C ...) so that a change in the machine's load falls
# on all of them alike; each rank bound to its own core (core 0 for rank 0, core 1 for rank 1):
#   A  one host, shared memory      mpirun -np 2 gpt (Open MPI's default transport between ranks of
#                                   one host: its shared-memory BTL, vader)
#   B  one host, TCP                the same with --mca btl tcp,self: TCP over the loopback
#   C  two hosts, TCP               a rank in each namespace (hosts_mpirun, placed by a rankfile),
#                                   TCP over the veth pair
# Every run trains S steps (default 150) with the GPT flags given (default: the baby GPT on the
# fortunes, batch 12 per rank, as bench/gpt_ranks) and reports gpt's "gpt result" line: the median
# step (the first 10 left out) and the communication backward still waited for at its end
# (exposed), and from its "communication" line the time from the first bucket's all-reduce start
# to the last one's end.
# Printed: each run, then the medians over the rounds as a Markdown table.
set -euo pipefail
rounds=5 steps=150
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *)
      echo "measure_two_hosts.sh: unknown option $1 (expected --rounds N, --steps S)" >&2
      exit 2
      ;;
  esac
done
if (($# < 3)); then
  echo "usage: measure_two_hosts.sh [--rounds N] [--steps S] GPT MPIEXEC WORKDIR" \
       "[-- GPT FLAGS...]" >&2
  exit 2
fi
gpt=$1 work=$3
HOSTS_MPIEXEC=$2 HOSTS_DIR=$work
shift 3
[[ ${1:-} == -- ]] && shift
flags=("$@")
source "$(dirname "$0")/hosts.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

trap hosts_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -rf "$work"
mkdir -p "$work"
hosts_up
printf 'rank 0=%s slot=0\nrank 1=%s slot=1\n' "$HOST_A" "$HOST_B" > "$work/rankfile"
HOSTS_RANKFILE=$work/rankfile HOSTS_TIMEOUT=600

common=(--steps "$steps" --warmup 10 --eval-every "$steps" --eval-windows 48 --sample-tokens 0
        --quiet --batch-size 12 "${flags[@]}")
one_host=(timeout -k 5 600 "$HOSTS_MPIEXEC" -np 2 --allow-run-as-root --oversubscribe
          --bind-to core)
names=("one host, shared memory" "one host, TCP (loopback)" "two hosts, TCP (veth)")
run_config() {  # run_config INDEX OUT: the command of configuration INDEX
  case $1 in
    0) "${one_host[@]}" "$gpt" "${common[@]}" --out "$2" ;;
    1) "${one_host[@]}" --mca btl tcp,self "$gpt" "${common[@]}" --out "$2" ;;
    2) hosts_mpirun "$gpt" "${common[@]}" --out "$2" ;;
  esac
}
field() { sed -n "s/^gpt result: .* $1=\([0-9.]*\).*/\1/p" "$2"; }
span() { sed -n 's/^communication: .*, \([0-9.]*\) ms from the first bucket.*/\1/p' "$1"; }
median() {
  sort -g | awk '{ v[NR] = $1 }
                 END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg);" \
     "$(getconf _NPROCESSORS_ONLN) cores; $rounds rounds of $steps steps"
echo "gpt flags: ${common[*]}"
for r in $(seq "$rounds"); do
  for c in 0 1 2; do
    log=$work/round${r}_$c.log
    if ! run_config "$c" "$work/out_${r}_$c" > "$log" 2>&1; then
      echo "measure_two_hosts.sh: '${names[c]}' failed; the end of $log:" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    step=$(field step_ms_median "$log") exposed=$(field comm_exposed_ms "$log") all=$(span "$log")
    echo "$step $exposed $all" >> "$work/config_$c"
    printf 'round %d  %-26s step %8.3f ms  communication: exposed %7.3f ms, ' \
      "$r" "${names[c]}" "$step" "$exposed"
    printf 'first start to last end %7.3f ms\n' "$all"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| 2 ranks | step ms | exposed communication ms/step |" \
     "first all-reduce start to last end, ms/step |"
echo "|---|---|---|---|"
for c in 0 1 2; do
  printf '| %s | %.1f | %.2f | %.2f |\n' "${names[c]}" \
    "$(cut -d' ' -f1 "$work/config_$c" | median)" "$(cut -d' ' -f2 "$work/config_$c" | median)" \
    "$(cut -d' ' -f3 "$work/config_$c" | median)"
done
echo "(medians of $rounds rounds)"
