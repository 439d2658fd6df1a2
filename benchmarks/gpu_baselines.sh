#!/usr/bin/env bash
# The GPU baselines of docs/benchmarks.md in one command, on one GPU (an H100/H200 with a CUDA
# PyTorch 2.x): launch/gpu-check first (build, device tests, 124M-shaped training with
# witnessing on, verify CERTIFIED), then
#   witness A/B     witnessing on vs off, paired, --pairs pairs (wit_bench_witness)
#   fused CE        the same with model.cross_entropy=fused (its CUDA kernels, 3 pairs): the
#                   witnessed step against the witness A/B's (not rehearsed: CUDA only)
#   all fused       the same with every fused key (model.layer_norm, model.gelu and
#                   optim.kernels = fused too; 3 pairs): what the other fused kernels add to the
#                   fused cross-entropy, and wit's fastest step beside the reference (not
#                   rehearsed: CUDA only); the optimizer's share is the profile's (its norm_clip
#                   and adamw parts)
#   unpadded        the witness A/B's step with GPT-2's 50,257-row embedding table (3 pairs):
#                   every other part pads it to 50,304 (model.vocab_pad=64, wit and reference)
#   determinism     the plain step with torch's deterministic algorithms off, against on
#   verify cost     replayed step time over trained step time, checkpoint load over a step
#   reference       the same GPT in plain PyTorch (benchmarks/torch_reference.py), eager and
#                   torch.compile, same shapes: wit's witnessed tokens/s over each
#   same seed       two runs from the same seed: their witness chain heads must be identical
#   two processes   N = 2 on the one GPU against N = 1 (refused where the backend cannot do it)
#   profile         where a step's time goes: wit's step (wit_bench_step_profile; on a GPU also
#                   with all of wit's fused kernels) beside the reference's, eager and compiled,
#                   by kind of work (benchmarks/profile_table.py), with device busy time,
#                   launches and host synchronisations per step; the profilers' Chrome traces
#                   are kept, gzipped (trace_*.json.gz)
#   scales          gpt2-350m, 774m, 1.5b and gpt-2b: tokens/s, MFU, witnessing parts as % of a
#                   step, checkpoint write time, peak GPU memory
# It prints the tables and writes everything to one JSON file (gpu-baselines.json in --out).
# The parts run in the order of what they decide: gpu-check, the witness A/B, the fused
# kernels, the reference and the profiles, the 1.5B scale (its MFU), the unpadded vocabulary,
# then the rest. The
# JSON and the table (table.md) are rewritten after every part, so a run stopped early keeps
# what finished; no part starts once --budget seconds have passed since the start (the skipped
# ones are listed).
#
# Usage: benchmarks/gpu_baselines.sh [--out DIR] [--pairs N] [--budget SECONDS] [--build DIR] [--rehearse]
#   --budget S   start no part after S seconds (default 480: 8 minutes; none when rehearsing)
#   --build DIR  an already configured build directory (launch/offline-build's build-offline)
#   --rehearse   the same flow on the CPU (build/, launch/build's libtorch), tiny shapes, fp32, to check
#                the script where there is no GPU
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-baselines}
pairs=20 rehearse=0 given_build="" budget=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    --build) given_build=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_baselines: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
# A rehearsal checks every part, so it has no budget unless one is given.
[ -z "$budget" ] && { [ $rehearse = 1 ] && budget=86400 || budget=480; }
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu_baselines: --budget $budget: expected whole seconds" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "gpu_baselines: --pairs $pairs: expected a positive count" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$(date +%s)
say() { echo "gpu_baselines: $*"; }
results="$out/parts"
rm -rf "$results" && mkdir -p "$results"
# Whether part $1 may start: not once the budget is spent (it is then listed as skipped).
part() {
  if (( $(date +%s) - started >= budget )); then
    say "skipping $1: ${budget} s of --budget spent"
    echo "$1" >>"$results/skipped.txt"
    return 1
  fi
  say "$1"
}

# --- gpu-check: build, device tests, the 124M run and its verification ------------------------
check=(launch/gpu-check --out "$out/check")
[ $rehearse = 1 ] && check+=(--rehearse)
[ -n "$given_build" ] && check+=(--build "$given_build")
"${check[@]}" || { say "gpu-check failed: see $out/check/gpu-check.json"; exit 1; }
if [ $rehearse = 1 ]; then
  build=build
  compute=(--set train.device=cpu --set train.precision=fp32 --set model.attention=auto)
  base=(--set model.n_layer=2 --set model.n_head=2 --set model.n_embd=64 --set model.context=128
        --set data.seq_len=128 --set train.micro_batches=2 --set train.micro_batch_size=4)
  first_scale="medium --set model.n_layer=3 --set model.n_embd=128 --set model.n_head=4"
  more_scales=("small --set model.n_layer=2 --set model.n_embd=96 --set model.n_head=2")
  pairs=$(( pairs < 4 ? pairs : 4 )) scale_steps=3 scale_pairs=2 seed_steps=3
  config=configs/gpt2-124m.yaml
else
  build=build-gpu
  compute=(--set train.device=cuda --set train.precision=bf16 --set model.attention=flash)
  # The embedding table padded to 50,304 rows, as nanoGPT's: the head's matmuls on aligned rows.
  base=(--set train.micro_batches=8 --set train.micro_batch_size=16 --set model.vocab_pad=64)
  first_scale=gpt2-1.5b more_scales=(gpt2-350m gpt2-774m gpt-2b)
  scale_steps=6 scale_pairs=3 seed_steps=10
  config=configs/gpt2-124m.yaml
fi
[ -n "$given_build" ] && build=$given_build
wit=$build/apps/wit/wit
bench=$build/benchmarks/wit_bench_witness
data=$out/check/data
key=$out/check/trainer.pem
common=(--set data.dir="$data" "${compute[@]}" --set train.eval_every=0 --set train.eval_batches=2
        --set train.log_every=1 --set optim.warmup_steps=2)


# The JSON and table.md from what has finished so far (every part's results are in parts/).
summarise() {
  python3 - "$out" "$rehearse" "${1:-}" >"$out/table.md" <<'PY'
import glob, json, os, re, statistics, sys
out, rehearse, final = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "final"
parts = os.path.join(out, "parts")
def load(name, default=None):
    p = os.path.join(parts, name)
    try:
        txt = open(p).read().strip()
        return json.loads(txt) if txt else default
    except (OSError, ValueError):
        return default
def metrics(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    steps = [r for r in rows if "tokens_per_s" in r][1:]
    med = lambda k: statistics.median(r[k] for r in steps) if steps else None
    last = lambda k: next((r[k] for r in reversed(rows) if k in r), None)
    return {"tokens_per_s": med("tokens_per_s"), "mfu": med("mfu"),
            "checkpoint_s": last("checkpoint_s"), "checkpoint_write_s": last("checkpoint_write_s"),
            "peak_device_bytes": last("peak_device_bytes")}
s = {"rehearsal": rehearse}
skipped = os.path.join(parts, "skipped.txt")
s["skipped"] = open(skipped).read().splitlines() if os.path.exists(skipped) else []
s["check"] = json.load(open(os.path.join(out, "check", "gpu-check.json")))
ab = load("witness_ab.json")
s["witness_ab"] = ab
fused = load("fused_ce.json")
s["fused_cross_entropy"] = fused
fused_all = load("fused_all.json")
s["fused_all_keys"] = fused_all
unpadded = load("unpadded.json")
s["unpadded_vocab"] = unpadded
nd = load("nondeterministic.json")
s["reference"] = {mode: load(f"reference_{mode}.json") for mode in ("eager", "compile")}
s["profile"] = load("profile_table.json")
s["determinism"] = ({"deterministic_plain_s": ab["plain_s"], "nondeterministic_plain_s": nd["plain_s"],
                     "cost": ab["plain_s"] / nd["plain_s"] - 1} if ab and nd else None)
v = open(os.path.join(out, "check", "verify.log")).read()
m = re.search(r"cost: (\d+) steps replayed in ([0-9.]+)s \(([0-9.]+)s/step; the trainer logged ([0-9.]+)s/step\), (\d+) checkpoint load\(s\) in ([0-9.]+)s", v)
if m:
    replay, logged, loads, load_s = float(m.group(3)), float(m.group(4)), int(m.group(5)), float(m.group(6))
    s["verify"] = {"replay_over_trained": replay / logged,
                   "load_over_step": (load_s / loads) / logged if loads else None}
heads = lambda r: (r or {}).get("heads")
a, b = load("seed_a.json"), load("seed_b.json")
s["same_seed"] = {"identical": heads(a) is not None and heads(a) == heads(b), "heads": heads(a)}
np2 = load("np2.json", {})
s["two_processes"] = ({"identical": heads(np2) == heads(a)} if heads(np2) else {"refused": np2.get("refused")})
s["scales"] = {}
for f in sorted(glob.glob(os.path.join(parts, "scale_*.metrics.jsonl"))):
    name = os.path.basename(f)[len("scale_"):-len(".metrics.jsonl")]
    row = metrics(f)
    w = load(f"scale_{name}_witness.json")
    if w:
        row["witness_parts_pct"] = 100 * (w["sketch_s"] + w["hash_s"] + w["seal_s"] + w["append_s"]) / w["plain_s"]
        row["params"] = w["params"]
        row["sketch_s"], row["sketch_ops_s"] = w["sketch_s"], w.get("sketch_ops_s")
    s["scales"][name] = row
json.dump(s, open(os.path.join(out, "gpu-baselines.json"), "w"), indent=2)

fmt = lambda x, f="{:.1f}": "-" if x is None else f.format(x)
base = "tiny (rehearsal)" if rehearse else "124M"
print("\n| config | what | measured | target |\n| --- | --- | --- | --- |")
c = s["check"]
print(f"| {base} | tokens/s, MFU (witnessing on) | {fmt(c.get('tokens_per_s_median'), '{:.0f}')}, {fmt(100 * c['mfu_median'] if c.get('mfu_median') else None)} % | MFU >= 40 % |")
if ab:
    print(f"| {base} | witnessing on vs off, {ab['pairs']} pairs | {100 * (ab['pair_ratio'] - 1):+.2f} % [{100 * (ab['pair_lo'] - 1):+.1f}, {100 * (ab['pair_hi'] - 1):+.1f}] | <= 1 % |")
if ab and ab.get("sketch_ops_s"):
    print(f"| {base} | the weight sketch: its kernel vs its torch operations | {1e3 * ab['sketch_s']:.2f} ms vs {1e3 * ab['sketch_ops_s']:.2f} ms: {ab['sketch_ops_s'] / ab['sketch_s']:.1f}x | report |")
if ab and fused:
    print(f"| {base} | witnessed step, fused cross-entropy vs ATen's (separate runs) | {fused['witnessed_s']:.3f} s vs {ab['witnessed_s']:.3f} s: {ab['witnessed_s'] / fused['witnessed_s']:.2f}x | report |")
if ab and unpadded:
    print(f"| {base} | witnessed step, embedding table padded to a multiple of 64 vs not (separate runs) | {ab['witnessed_s']:.3f} s vs {unpadded['witnessed_s']:.3f} s: {unpadded['witnessed_s'] / ab['witnessed_s']:.2f}x | report |")
if fused and fused_all:
    print(f"| {base} | witnessed step, every fused key vs the fused cross-entropy alone (separate runs) | {fused_all['witnessed_s']:.3f} s vs {fused['witnessed_s']:.3f} s: {fused['witnessed_s'] / fused_all['witnessed_s']:.2f}x | report |")
for mode, r in s["reference"].items():
    if r and ab:
        wit_tps = r["tokens_per_step"] / ab["witnessed_s"]
        print(f"| {base} | wit (witnessed) vs PyTorch {mode}: tokens/s | {wit_tps:.0f} vs {r['tokens_per_s']:.0f}: {wit_tps / r['tokens_per_s']:.2f}x | >= 1.0x compile |")
        for what, f in (("fused cross-entropy", fused), ("every fused key", fused_all)):
            if f:
                wit_tps = r["tokens_per_step"] / f["witnessed_s"]
                print(f"| {base} | wit, {what}, vs PyTorch {mode}: tokens/s | {wit_tps:.0f} vs {r['tokens_per_s']:.0f}: {wit_tps / r['tokens_per_s']:.2f}x | >= 1.0x compile |")
if s["determinism"]:
    print(f"| {base} | deterministic algorithms on vs off | {100 * s['determinism']['cost']:+.1f} % | report |")
if "verify" in s:
    print(f"| {base} | replayed / trained step; load / step | {s['verify']['replay_over_trained']:.2f}; {fmt(s['verify']['load_over_step'], '{:.2f}')} | <= 1.1; <= 1 |")
if a is not None:
    print(f"| {base} | same seed twice: chain heads | {'identical' if s['same_seed']['identical'] else 'DIFFERENT'} | identical |")
tp = s["two_processes"]
if np2:
    print(f"| {base} | N=2 on one device vs N=1 | {('identical' if tp['identical'] else 'DIFFERENT') if 'identical' in tp else 'refused: ' + str(tp.get('refused'))[:80]} | identical |")
for name, r in s["scales"].items():
    gib = r["peak_device_bytes"] / 2**30 if r.get("peak_device_bytes") else None
    print(f"| {name} | tokens/s, MFU, witnessing, checkpoint stall (write), peak memory | {fmt(r['tokens_per_s'], '{:.0f}')}, {fmt(100 * r['mfu'] if r['mfu'] else None)} %, {fmt(r.get('witness_parts_pct'), '{:.2f}')} %, {fmt(r['checkpoint_s'], '{:.1f}')} s ({fmt(r.get('checkpoint_write_s'), '{:.1f}')} s), {fmt(gib, '{:.1f}')} GiB | MFU >= 50 % at 1.5B; witnessing <= 1 % |")
for name, r in s["scales"].items():
    if r.get("sketch_ops_s"):
        print(f"| {name} | the weight sketch: its kernel vs its torch operations | {1e3 * r['sketch_s']:.2f} ms vs {1e3 * r['sketch_ops_s']:.2f} ms: {r['sketch_ops_s'] / r['sketch_s']:.1f}x | report |")
for f in sorted(glob.glob(os.path.join(parts, "scale_*.json"))):
    if (load(os.path.basename(f)) or {}).get("failed"):
        print(f"| {os.path.basename(f)[len('scale_'):-len('.json')]} | training | FAILED (see scale_*.log) | |")
for name in s["skipped"]:
    print(f"| - | {name} | skipped: the --budget was spent | |")
if final:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        pts = [(r["params"], r["witness_parts_pct"]) for r in s["scales"].values() if "params" in r]
        if pts:
            plt.figure(figsize=(6, 4))
            plt.semilogx([p for p, _ in pts], [o for _, o in pts], "o-")
            plt.xlabel("parameters"); plt.ylabel("witnessing, % of a step"); plt.title("Witnessing overhead against scale")
            plt.grid(True, alpha=0.3); plt.tight_layout()
            plt.savefig(os.path.join(out, "overhead-vs-scale.png"), dpi=120)
            print(f"\nplot: {os.path.join(out, 'overhead-vs-scale.png')}")
    except ImportError:
        print("\n(no matplotlib here: the plot of overhead against scale is left out)")
if os.path.exists(os.path.join(out, "profile_table.md")):
    print(open(os.path.join(out, "profile_table.md")).read())
print(f"\nall figures: {os.path.join(out, 'gpu-baselines.json')}")
PY
}

summarise

# --- witnessing on vs off, paired -----------------------------------------------------------------
if part "witness A/B over $pairs pairs"; then
  "$bench" --data "$data" --config "$config" --name 124m --pairs "$pairs" "${compute[@]}" "${base[@]}" \
    >"$out/witness_ab.log" 2>&1 || { tail -3 "$out/witness_ab.log"; say "the witness A/B failed"; }
  grep '^json: ' "$out/witness_ab.log" | sed 's/^json: //' >"$results/witness_ab.json" || true
  summarise
fi

# --- the fused cross-entropy against the ATen one (model.cross_entropy; CUDA only) ---------------
if [ $rehearse = 1 ]; then
  say "the fused cross-entropy is not rehearsed: its kernels run on CUDA only"
elif part "fused cross-entropy (model.cross_entropy=fused), 3 pairs"; then
  "$bench" --data "$data" --config "$config" --name 124m-fused --pairs 3 "${compute[@]}" "${base[@]}" \
    --set model.cross_entropy=fused >"$out/fused_ce.log" 2>&1 ||
    { tail -3 "$out/fused_ce.log"; say "the fused cross-entropy run failed"; }
  grep '^json: ' "$out/fused_ce.log" | sed 's/^json: //' >"$results/fused_ce.json" || true
  summarise
fi
if [ $rehearse = 0 ] && part "every fused key (model.layer_norm, model.gelu and optim.kernels = fused too), 3 pairs"; then
  "$bench" --data "$data" --config "$config" --name 124m-fused-all --pairs 3 "${compute[@]}" "${base[@]}" \
    --set model.cross_entropy=fused --set model.layer_norm=fused --set model.gelu=fused \
    --set optim.kernels=fused >"$out/fused_all.log" 2>&1 ||
    { tail -3 "$out/fused_all.log"; say "the run with every fused key failed"; }
  grep '^json: ' "$out/fused_all.log" | sed 's/^json: //' >"$results/fused_all.json" || true
  summarise
fi

# --- the peer: the same GPT in plain PyTorch, eager and torch.compile ------------------------------
# Same config, shapes, optimizer and precision as the witness A/B just before it.
py=python3
[ -x deps/venv/bin/python ] && py=deps/venv/bin/python
modes=(eager compile)
if [ $rehearse = 1 ]; then
  ref=(--device cpu --precision fp32 --warmup 1 --steps 2)
  # torch.compile on the CPU compiles C++ against Python's headers, which a bare node may lack.
  if ! "$py" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    modes=(eager)
    say "torch.compile not rehearsed: this python has no Python.h"
  fi
else
  ref=(--device cuda --precision bf16 --warmup 3 --steps 10)
fi
for mode in "${modes[@]}"; do
  part "the PyTorch reference (benchmarks/torch_reference.py), $mode, with its profile" || continue
  "$py" benchmarks/torch_reference.py "$config" "${base[@]}" "${ref[@]}" --mode $mode \
    --profile "$results/profile_torch-$mode.json" --trace "$out/trace_torch-$mode.json" \
    >"$out/reference_$mode.log" 2>&1 ||
    { tail -3 "$out/reference_$mode.log"; say "the $mode reference failed"; [ $rehearse = 0 ] || exit 1; }
  grep '^json: ' "$out/reference_$mode.log" | sed 's/^json: //' >"$results/reference_$mode.json" || true
  summarise
done

# --- where the step's time goes: wit's profile beside the reference's --------------------------------
if part "profile of wit's step (wit_bench_step_profile)"; then
  "$build/benchmarks/wit_bench_step_profile" --data "$data" --config "$config" "${compute[@]}" "${base[@]}" \
    --warmup 2 --steps 2 --trace "$out/trace_wit.json" >"$out/profile_wit.log" 2>&1 ||
    { tail -3 "$out/profile_wit.log"; say "the profile of wit's step failed"; [ $rehearse = 0 ] || exit 1; }
  grep '^json: ' "$out/profile_wit.log" | sed 's/^json: //' >"$results/profile_wit.json" || true
  # The same step with all of wit's fused kernels, beside it (CUDA only): its norm_clip and adamw
  # parts against the plain step's are the fused optimizer's share.
  if [ $rehearse = 0 ]; then
    "$build/benchmarks/wit_bench_step_profile" --data "$data" --config "$config" "${compute[@]}" "${base[@]}" \
      --set model.cross_entropy=fused --set model.layer_norm=fused --set model.gelu=fused --set optim.kernels=fused \
      --warmup 2 --steps 2 --trace "$out/trace_wit-fused.json" \
      >"$out/profile_wit-fused.log" 2>&1 || { tail -3 "$out/profile_wit-fused.log"; say "the fused profile failed"; }
    grep '^json: ' "$out/profile_wit-fused.log" | sed 's/^json: //' >"$results/profile_wit-fused.json" || true
  fi
  gzip -f "$out"/trace_*.json 2>/dev/null || true
  profiles=()
  for p in wit wit-fused torch-eager torch-compile; do
    [ -s "$results/profile_$p.json" ] && profiles+=("$p=$results/profile_$p.json")
  done
  python3 benchmarks/profile_table.py "${profiles[@]}" --json "$results/profile_table.json" \
    >"$out/profile_table.md" || say "the profile table failed"
  summarise
fi

# --- scales: tokens/s, MFU, witnessing share, checkpoint stall, peak memory ----------------------------
scale() {  # NAME SETS...
  local name=$1 cfg
  shift
  if [ $rehearse = 1 ]; then cfg=$config; else cfg=configs/$name.yaml; fi
  part "scale $name" || return 0
  rm -rf "$out/scale_$name"
  "$wit" train "$cfg" --out "$out/scale_$name" --key "$key" "${common[@]}" "${base[@]}" "$@" \
    --set train.steps=$scale_steps --set train.checkpoint_every=$scale_steps \
    --set witness.fingerprint_every=$scale_steps -q >"$out/scale_$name.log" 2>&1 ||
    { tail -3 "$out/scale_$name.log"; echo "{\"failed\": true}" >"$results/scale_$name.json"; return 0; }
  "$bench" --data "$data" --config "$cfg" --name "$name" --pairs $scale_pairs \
    "${compute[@]}" "${base[@]}" "$@" >"$out/scale_${name}_witness.log" 2>&1 || true
  grep '^json: ' "$out/scale_${name}_witness.log" | sed 's/^json: //' >"$results/scale_${name}_witness.json" || true
  cp "$out/scale_$name/metrics.jsonl" "$results/scale_$name.metrics.jsonl"
  summarise
}
# The scale whose MFU the target names comes first.
# shellcheck disable=SC2086
scale ${first_scale}

# --- GPT-2's unpadded vocabulary against the padded one of every other part ------------------------
if part "unpadded vocabulary (model.vocab_pad=1), 3 pairs"; then
  "$bench" --data "$data" --config "$config" --name 124m-unpadded --pairs 3 "${compute[@]}" "${base[@]}" \
    --set model.vocab_pad=1 >"$out/unpadded.log" 2>&1 ||
    { tail -3 "$out/unpadded.log"; say "the unpadded run failed"; [ $rehearse = 0 ] || exit 1; }
  grep '^json: ' "$out/unpadded.log" | sed 's/^json: //' >"$results/unpadded.json" || true
  summarise
fi

# --- deterministic algorithms off, for the cost ---------------------------------------------------
if part "plain step with deterministic algorithms off"; then
  "$bench" --data "$data" --config "$config" --name 124m-nondeterministic --pairs 3 --nondeterministic 1 \
    "${compute[@]}" "${base[@]}" >"$out/nondeterministic.log" 2>&1 ||
    say "the nondeterministic run failed (see $out/nondeterministic.log)"
  grep '^json: ' "$out/nondeterministic.log" | sed 's/^json: //' >"$results/nondeterministic.json" || true
  summarise
fi

# --- the same seed twice --------------------------------------------------------------------------
if part "two runs from the same seed"; then
  for r in a b; do
    rm -rf "$out/seed_$r"
    "$wit" train "$config" --out "$out/seed_$r" --key "$key" "${common[@]}" "${base[@]}" \
      --set train.steps=$seed_steps --set train.checkpoint_every=0 -q >/dev/null
    "$wit" inspect "$out/seed_$r" --json >"$results/seed_$r.json"
  done
  summarise
fi

# --- two processes on the one device ------------------------------------------------------------
if part "N = 2 on the one device against N = 1"; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  rm -rf "$out/np2"
  if mpirun --oversubscribe --bind-to none -np 2 "$wit" train "$config" --out "$out/np2" --key "$key" \
       "${common[@]}" "${base[@]}" --set train.steps=$seed_steps --set train.checkpoint_every=0 \
       -q >"$out/np2.log" 2>&1; then
    "$wit" inspect "$out/np2" --json >"$results/np2.json"
  else
    echo "{\"refused\": $(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read().strip().splitlines()[-1] if open(sys.argv[1]).read().strip() else ""))' "$out/np2.log")}" >"$results/np2.json"
  fi
  summarise
fi

# --- the other scales -------------------------------------------------------------------------------
for entry in "${more_scales[@]}"; do
  # shellcheck disable=SC2086
  scale ${entry}
done

summarise final
cat "$out/table.md"
