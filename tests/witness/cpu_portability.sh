#!/usr/bin/env bash
# Exact replay across CPUs, shown on one machine by forcing the code paths another CPU would take.
# With the CPU numerics pinned (the default, portable: trainer/cpu_numerics.h), a run trained with
# MKL told to take its AVX2 branch and ATen told to use its generic kernels is certified by a
# verifier whose MKL may use AVX-512: the pin replaces what the process was told, and the bits are
# the pinned ones. A run trained with its native numerics, or with the earlier avx2 pin, is
# replayed only where the numerics are the same: elsewhere the verifier refuses before replaying
# and names both machines (never REJECTED); --resume refuses another numerics; a bad
# WIT_CPU_NUMERICS is refused.
# Usage: cpu_portability.sh WIT_BINARY DISHONEST_BINARY SOURCE_DIR
source "$(dirname "$0")/verify_setup.sh"
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo ||
  { echo "SKIP: this CPU has no AVX2/FMA, so it cannot run the pinned numerics"; exit 77; }
facts() { "$wit" inspect "$1" --json | /usr/bin/python3 -c "
import json, sys
s = json.load(sys.stdin)['sessions'][-1]['compute']
print(s['numerics'], s['aten'], s['mkl_cbwr'])"; }

# Pinned: trained as an AVX2-only machine with ATen's generic kernels asked for ...
MKL_ENABLE_INSTRUCTIONS=AVX512 ATEN_CPU_CAPABILITY=default MKL_CBWR=AVX2 \
  "$wit" train "$cfg" "${sets[@]}" --out "$work/pinned" -q >"$work/pinned.train" 2>&1 ||
  { cat "$work/pinned.train"; fail "train pinned"; }
grep -q "ATEN_CPU_CAPABILITY=default replaced by avx2" "$work/pinned.train" ||
  fail "the replaced setting is not reported: $(cat "$work/pinned.train")"
[ "$(facts "$work/pinned")" = "portable AVX2 0x10003" ] || fail "pinned facts: $(facts "$work/pinned")"
echo "pinned run: trained with MKL asked for its AVX2 branch and AVX-512, ATen for its generic kernels; facts $(facts "$work/pinned")"
# ... replayed as this machine runs by itself, and with MKL's AVX-512 allowed explicitly.
for env in "" "MKL_ENABLE_INSTRUCTIONS=AVX512 ATEN_CPU_CAPABILITY=avx512"; do
  rm -f "$work/pinned/certificate.json"
  env $env "$wit" verify "$work/pinned" --key "$work/verifier.pem" -c 40 >"$work/v.out" 2>&1 ||
    { cat "$work/v.out"; fail "the pinned run was not certified under '${env:-this machine}'"; }
  grep -q "^CERTIFIED" "$work/v.out" || fail "no CERTIFIED line under '${env:-this machine}'"
  echo "pinned run verified under '${env:-this machine as it is}': certified, every segment bit for bit"
done

# Native: the machine's own paths, here ATen's generic kernels.
WIT_CPU_NUMERICS=native ATEN_CPU_CAPABILITY=default \
  "$wit" train "$cfg" "${sets[@]}" --out "$work/native" -q >/dev/null 2>&1 || fail "train native"
[ "$(facts "$work/native" | cut -d' ' -f1-2)" = "native DEFAULT" ] || fail "native facts: $(facts "$work/native")"
# A pinned verifier, and a native one whose ATen picks other kernels, refuse before replaying.
for env in "" "WIT_CPU_NUMERICS=native ATEN_CPU_CAPABILITY=avx2"; do
  if env $env "$wit" verify "$work/native" --key "$work/verifier.pem" -c 40 >"$work/v.out" 2>&1; then
    cat "$work/v.out"; fail "a native run was verified under other numerics ('${env:-pinned}')"
  fi
  grep -q "REJECTED" "$work/v.out" && { cat "$work/v.out"; fail "a refusal reads as REJECTED"; }
  [ -f "$work/native/certificate.json" ] && fail "a refused verification wrote a certificate"
  grep -q "an exact replay needs the same CPU numerics" "$work/v.out" || fail "no reason: $(cat "$work/v.out")"
  grep -q "native numerics (ATen DEFAULT" "$work/v.out" || fail "the run's machine is not named: $(cat "$work/v.out")"
  echo "native run under '${env:-pinned numerics}': refused: $(grep -o 'the run trained on.*libtorch [^ ,:]*' "$work/v.out" | tail -1)"
done
# With a tolerance it is replayed, and says why.
"$wit" verify "$work/native" --key "$work/verifier.pem" -c 40 --tolerance 1e-2 >"$work/v.out" 2>&1
[ $? = 4 ] && grep -q "^CONSISTENT WITHIN TOLERANCE" "$work/v.out" ||
  { cat "$work/v.out"; fail "tolerance replay of the native run"; }
grep -q "replaying within the tolerance" "$work/v.out" || fail "the tolerance note is missing"
echo "native run under pinned numerics with --tolerance: consistent within tolerance ($(grep -o 'loss [0-9.e+-]*' "$work/v.out" | head -1))"
rm -f "$work/native/certificate.json"
# Where the numerics are the same, the native run is certified.
WIT_CPU_NUMERICS=native ATEN_CPU_CAPABILITY=default \
  "$wit" verify "$work/native" --key "$work/verifier.pem" -c 40 >"$work/v.out" 2>&1 ||
  { cat "$work/v.out"; fail "the native run under its own numerics"; }
grep -q "^CERTIFIED" "$work/v.out" || fail "no CERTIFIED line for the native run under its own numerics"
echo "native run under its own numerics: certified"

# The earlier pin (MKL's AVX2 branch, which MKL honours on Intel CPUs only): its runs are
# verified under it, and refused by a verifier with the portable pin.
WIT_CPU_NUMERICS=avx2 "$wit" train "$cfg" "${sets[@]}" --out "$work/avx2" -q >/dev/null 2>&1 || fail "train avx2"
if "$wit" verify "$work/avx2" --key "$work/verifier.pem" -c 40 >"$work/v.out" 2>&1; then
  cat "$work/v.out"; fail "an avx2-pinned run was verified under the portable pin"
fi
grep -q "an exact replay needs the same CPU numerics" "$work/v.out" || fail "avx2 run: $(cat "$work/v.out")"
grep -q "REJECTED" "$work/v.out" && { cat "$work/v.out"; fail "an avx2 run reads as REJECTED"; }
WIT_CPU_NUMERICS=avx2 "$wit" verify "$work/avx2" --key "$work/verifier.pem" -c 40 >"$work/v.out" 2>&1 ||
  { cat "$work/v.out"; fail "the avx2 run under WIT_CPU_NUMERICS=avx2"; }
echo "avx2-pinned run (facts $(facts "$work/avx2")): refused under the portable pin, certified under WIT_CPU_NUMERICS=avx2"

# A resume continues with the same arithmetic: the pinned run cannot go on natively.
cp -r "$work/pinned" "$work/resume"
if WIT_CPU_NUMERICS=native "$wit" train --resume "$work/resume" -q >"$work/r.out" 2>&1; then
  fail "a pinned run was resumed with native numerics"
fi
grep -q "a resume must continue the trajectory with the same arithmetic" "$work/r.out" || fail "resume: $(cat "$work/r.out")"
echo "resume with other numerics: refused"

out=$(WIT_CPU_NUMERICS=sse "$wit" inspect "$work/pinned" 2>&1) && fail "WIT_CPU_NUMERICS=sse accepted"
grep -q "WIT_CPU_NUMERICS=sse: expected portable" <<<"$out" || fail "bad WIT_CPU_NUMERICS: $out"
echo "cpu portability: all passed"
