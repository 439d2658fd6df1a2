#!/usr/bin/env bash
# The golden trace at N = 1, N = 2 DDP and N = 2 FSDP against golden_trace.expected: every
# step's loss bits, the final weights, the step records' chain head and the final state hash.
# The bits are those of the pinned CPU numerics (trainer/cpu_numerics.h, portable: MKL's
# COMPATIBLE branch, ATen's AVX2 kernels, oneDNN at most AVX2), which every x86-64 CPU with AVX2
# and FMA gives, Intel or AMD; the trace is also run under every code path this machine can be
# forced into by the libraries' environment (MKL held to AVX2 or allowed AVX-512, its AVX2 and
# AVX-512 branches, ATen's generic or AVX-512 kernels, oneDNN at SSE4.1, OpenBLAS's Sandybridge
# kernels); the pin replaces them and the bits must be the golden ones.
# A CPU without AVX2/FMA cannot run the pin: skipped.
# Usage: golden_trace.sh WIT_BINARY GOLDEN_TRACE_BINARY SOURCE_DIR
set -euo pipefail
wit=$1
trace=$2
src=$3
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo ||
  { echo "SKIP: this CPU has no AVX2/FMA, so it cannot run the pinned numerics"; exit 77; }
work=$(mktemp -d /tmp/wit-golden-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun="mpirun --oversubscribe --bind-to none -np"
"$wit" prepare --out "$work/data" >/dev/null
cfg="$src/configs/tiny.yaml"
expected="$src/tests/golden/golden_trace.expected"
status=0
check() {
  local name=$1 file=$2
  if cmp -s "$expected" "$file"; then
    echo "golden: $name"
  else
    echo "FAIL: $name differs from the golden trace ($(lscpu | sed -n 's/^Model name: *//p')):"
    diff "$expected" "$file" | head -20 || true
    status=1
  fi
}
"$trace" "$work/data" ddp "$cfg" >"$work/n1"
check "N=1" "$work/n1"
$mpirun 2 "$trace" "$work/data" ddp "$cfg" >"$work/ddp2"
check "N=2 DDP" "$work/ddp2"
$mpirun 2 "$trace" "$work/data" fsdp "$cfg" >"$work/fsdp2"
check "N=2 FSDP" "$work/fsdp2"
# Every buffer staged through host copies (how device buffers travel when ranks share a GPU).
$mpirun 2 "$trace" "$work/data" ddp "$cfg" staged >"$work/ddp2s"
check "N=2 DDP, staged" "$work/ddp2s"
$mpirun 2 "$trace" "$work/data" fsdp "$cfg" staged >"$work/fsdp2s"
check "N=2 FSDP, staged" "$work/fsdp2s"
# Forced code paths, N = 1: what another CPU (or a user's environment) would make of this one.
# Each run forces every library at once, the narrow paths in one and the wide in the other: the
# pin replaces each variable, so a variable it missed fails its run either way.
for forced in "MKL_ENABLE_INSTRUCTIONS=AVX2 MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41" \
              "MKL_ENABLE_INSTRUCTIONS=AVX512 MKL_CBWR=AVX512 ATEN_CPU_CAPABILITY=avx512 OPENBLAS_CORETYPE=Sandybridge"; do
  env $forced "$trace" "$work/data" ddp "$cfg" >"$work/forced" 2>/dev/null
  check "N=1 under $forced" "$work/forced"
done
[ $status = 0 ] && echo "all golden"
exit $status
