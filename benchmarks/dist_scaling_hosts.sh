#!/usr/bin/env bash
# DDP scaling over TCP between hosts: the compute-bound config of dist_scaling.sh at N = 1 and
# N = 2, where the two ranks are two "hosts" (network namespaces on a private bridge,
# tests/dist/netns_hosts.sh) talking over TCP, on the same two cores as the single-host figure.
# Three alternating rounds; the median ratio is reported, with the time in collectives and the
# bytes a step sends per rank, on the wire, against the recursive-halving schedule's minimum.
# Needs root. Usage: benchmarks/dist_scaling_hosts.sh [DATA_DIR]
# WIT_BIND=core binds each rank to a core as launch/mpi-hostfile does on real machines; every
# namespace "host" then picks core 0 (default: none).
source "$(dirname "$0")/dist_setup.sh"
[ "$(id -u)" -eq 0 ] || { echo "dist_scaling_hosts: needs root (network namespaces)" >&2; exit 1; }
source tests/dist/netns_hosts.sh
work=$(mktemp -d /tmp/wit-hosts-bench-XXXXXX)
trap 'hosts_down; rm -rf "$work"' EXIT
hosts_up 2
hosts_agent "$work/agent"
hosts_mpi_env "$work/agent"
hosts_file 2 "$work/hosts2"
hosts_file 1 "$work/hosts1"
data=$(cd "$data" && pwd)
runs=()
for round in 1 2 3; do
  one=$(on_host 1 mpirun --hostfile "$work/hosts1" -np 1 --bind-to "${WIT_BIND:-none}" "$(pwd)/$bench" --mode ddp --data "$data" --steps 3 "${compute[@]}")
  two=$(on_host 1 mpirun --hostfile "$work/hosts2" -np 2 --bind-to "${WIT_BIND:-none}" "$(pwd)/$bench" --mode ddp --data "$data" --steps 3 "${compute[@]}")
  echo "round $round N=1: $one"; echo "round $round N=2 (2 hosts, TCP): $two"
  runs+=("$one" "$two")
done
# Bytes on the wire: host 2's eth0 (rank 1's sends with their TCP/IP headers, and its Open MPI
# daemon's) over an N=2 run of 1 and of 5 timed steps; the difference is 4 steps' worth.
tx() { ip netns exec "${hosts_prefix}h2" cat /sys/class/net/eth0/statistics/tx_bytes; }
wire=()
for steps in 1 5; do
  before=$(tx)
  on_host 1 mpirun --hostfile "$work/hosts2" -np 2 --bind-to "${WIT_BIND:-none}" "$(pwd)/$bench" --mode ddp --data "$data" --steps $steps "${compute[@]}" >/dev/null
  wire+=($(( $(tx) - before )))
done
python3 - "$(( (wire[1] - wire[0]) / 4 ))" "${runs[@]}" <<'PY'
import json, sys
wire = int(sys.argv[1])
runs = [json.loads(a) for a in sys.argv[2:]]
ratios = sorted((runs[i + 1]["tokens_per_s"] / runs[i]["tokens_per_s"], i) for i in range(0, len(runs), 2))
ratio, i = ratios[len(ratios) // 2]
one, two = runs[i], runs[i + 1]
P = two["params"]
# Recursive halving: a rank sends half its buffer to its partner and gets the other half back,
# then the all-gather sends its half: about P floats out per rank per step at N = 2.
print(f"\nscaling over TCP between 2 hosts: {ratio:.2f}x the tokens/s of 1 (median of "
      f"{', '.join(f'{r:.2f}' for r, _ in ratios)}; {one['tokens_per_s']:.0f} -> {two['tokens_per_s']:.0f})")
print(f"time in collectives: {100 * two['comm_s'] / two['step_s']:.1f}% of the N=2 step; the "
      f"schedule's minimum is {4 * P / 2**20:.1f} MiB sent per rank per step ({P / 1e6:.1f}M fp32 gradients)")
print(f"measured on host 2's eth0: {wire / 2**20:.1f} MiB sent per step, {wire / (4 * P):.3f}x the minimum "
      f"(TCP/IP headers and Open MPI's framing included)")
PY
