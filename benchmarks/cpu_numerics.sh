#!/usr/bin/env bash
# The price of pinned CPU numerics (trainer/cpu_numerics.h): the training step of the tiny config
# and of a 124M-shaped one on one thread (wit_bench_train), with the numerics pinned (the default,
# portable: MKL's COMPATIBLE branch, the same bits on every vendor's CPU), with this CPU's native
# kernels (WIT_CPU_NUMERICS=native: AVX-512 where the CPU has it), and with the earlier pin to
# MKL's AVX2 branch (WIT_CPU_NUMERICS=avx2, honoured on Intel CPUs only), alternating the three
# each round so drift hits them alike; the median step time of each and the ratios to the pinned
# one.
# Usage: benchmarks/cpu_numerics.sh [ROUNDS]   (default 3; after launch/build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
bench=${WIT_BUILD_DIR:-build}/benchmarks/wit_bench_train
work=$(mktemp -d /tmp/wit-cpu-numerics-XXXXXX)
trap 'rm -rf "$work"' EXIT
${WIT_BUILD_DIR:-build}/apps/wit/wit prepare --out "$work/data" >/dev/null
declare -A env=(
  [pinned]=""
  [native]="WIT_CPU_NUMERICS=native"
  [avx2]="WIT_CPU_NUMERICS=avx2"
)
modes=(pinned native avx2)
for m in "${modes[@]}"; do : >"$work/$m.tiny"; : >"$work/$m.124m"; done
echo "cpu: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
for r in $(seq "$rounds"); do
  for m in "${modes[@]}"; do
    env ${env[$m]} "$bench" --data "$work/data" --steps 3 >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
    t=$(awk '$1 == "tiny" && $2 != "step" {print $(NF-3)}' "$work/out")
    b=$(awk '$1 == "124M-shaped" && $0 !~ / step [0-9]/ {print $(NF-3)}' "$work/out")
    echo "round $r $m: tiny $t s/step, 124M-shaped $b s/step"
    echo "$t" >>"$work/$m.tiny"
    echo "$b" >>"$work/$m.124m"
  done
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '\n%-12s %14s %10s %20s %10s\n' numerics "tiny s/step" "vs pinned" "124M-shaped s/step" "vs pinned"
pt=$(median "$work/pinned.tiny") pb=$(median "$work/pinned.124m")
for m in "${modes[@]}"; do
  t=$(median "$work/$m.tiny") b=$(median "$work/$m.124m")
  printf '%-12s %14s %9.2fx %20s %9.2fx\n' "$m" "$t" "$(awk -v a="$t" -v p="$pt" 'BEGIN{print a/p}')" \
    "$b" "$(awk -v a="$b" -v p="$pb" 'BEGIN{print a/p}')"
done
