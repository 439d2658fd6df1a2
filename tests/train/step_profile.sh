#!/usr/bin/env bash
# The step profile the GPU baselines print (benchmarks/step_profile.cpp, torch_reference.py
# --profile, profile_table.py), on a tiny model on the CPU: wit's profile accounts for the step's
# matmuls, stays within its wall time and puts it in the step's parts; the reference's profile is
# read beside it, part by part; a bad argument or file is an error, not an empty table.
# Usage: step_profile.sh WIT_BINARY PROFILE_BINARY SOURCE_DIR
wit=$1 profile=$2 src=$3
source "$(dirname "$0")/setup.sh"
shapes=(--set model.n_layer=2 --set model.n_embd=32 --set model.n_head=2 --set model.context=32
        --set data.seq_len=32 --set train.micro_batches=2 --set train.micro_batch_size=2)
"$profile" --data "$work/data" --config "$src/configs/tiny.yaml" "${shapes[@]}" --warmup 1 --steps 2 \
  --trace "$work/trace.json" >"$work/wit.log" 2>&1 || { cat "$work/wit.log"; fail "wit_bench_step_profile"; }
[ -s "$work/trace.json" ] || fail "no Chrome trace written"
"$python" - "$work/wit.log" <<'PY' || fail "wit's profile"
import json, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("json: "))
p = json.loads(line[len("json: "):])
assert p["source"] == "wit" and p["device"] == "cpu" and p["steps"] == 2, p
ops = {r["name"]: r for r in p["ops"]}
# 2 layers: 4 matmuls a block forward (qkv, proj, fc, fc2) over 2 micro-batches, and more backward.
assert ops["aten::addmm"]["count"] >= 16, ops["aten::addmm"]
self_s = sum(r["s"] for r in p["ops"])
assert 0 < self_s <= 1.05 * p["wall_s"], (self_s, p["wall_s"])  # self times do not double count
assert p["device_busy_s"] is None and p["kernels"] == [], "device figures on the CPU"
# Every part of the step is there (witnessing on), and the parts hold the step's time.
parts = {r["name"]: r for r in p["parts"]}
want = {"batch", "forward_backward", "gradients", "loss", "norm_clip", "adamw", "sketch", "seal"}
assert want <= set(parts), sorted(parts)
assert parts["forward_backward"]["s"] > 0.5 * self_s, parts["forward_backward"]
assert abs(sum(r["s"] for r in p["parts"]) - self_s) < 1e-6 * max(1, self_s) + 1e-9, "parts lose time"
assert parts.get("outside the parts", {"s": 0})["s"] < 0.05 * self_s, parts.get("outside the parts")
PY
"$python" "$src/benchmarks/torch_reference.py" "$src/configs/tiny.yaml" "${shapes[@]}" --device cpu \
  --precision fp32 --warmup 1 --steps 1 --profile "$work/eager.json" >"$work/eager.log" 2>&1 ||
  { tail -5 "$work/eager.log"; fail "torch_reference.py --profile"; }
"$python" "$src/benchmarks/profile_table.py" wit="$work/wit.log" torch-eager="$work/eager.json" \
  --json "$work/table.json" >"$work/table.md" || fail "profile_table.py"
cat "$work/table.md"
grep -q '^| matmul | [0-9.]* ([0-9]*) | [0-9.]* ([0-9]*) |$' "$work/table.md" || fail "no matmul row for both"
grep -q '^| \*\*wall time\*\* |' "$work/table.md" || fail "no wall time row"
grep -q '^| forward_backward | [0-9.]* ([0-9]*) | [0-9.]* ([0-9]*) |$' "$work/table.md" ||
  fail "no forward_backward part for both"
"$python" -c "import json,sys; t=json.load(open(sys.argv[1])); assert set(t) == {'wit', 'torch-eager'}" \
  "$work/table.json" || fail "the table's json"
# Errors say what is wrong and exit non-zero.
if "$python" "$src/benchmarks/profile_table.py" wit="$work/data/manifest.h5" >"$work/err" 2>&1; then
  fail "a file that is no profile was accepted"
fi
grep -q "not a step profile" "$work/err" || fail "unclear error: $(cat "$work/err")"
if "$profile" --steps 0 >"$work/err" 2>&1; then fail "--steps 0 was accepted"; fi
grep -q "steps >= 1" "$work/err" || fail "unclear error: $(cat "$work/err")"
echo "step profile: all passed"
