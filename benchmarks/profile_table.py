#!/usr/bin/env python3
"""Where a training step's time goes, side by side: the per-step profiles that
wit_bench_step_profile (its "json: " line) and torch_reference.py --profile write, grouped by kind
of work (matmuls, attention, layer norm, elementwise, copies, ...), in seconds per step and in
kernels (on a GPU) or operations (on a CPU) per step. Below the table: wall time, the time the
device was busy, kernel launches and host synchronisations per step; then the same time by part
of the step (forward_backward, gradients, norm_clip, adamw, and wit's batch, loss, sketch, seal);
then each profile's largest items.

On a GPU the groups are of device kernels; on a CPU, of ATen operations' self time. The grouping
is by name, so it is a guide, not an accounting: wit's AdamW on a GPU runs as elementwise
kernels, and the compiler's fused kernels form their own group.

Usage: profile_table.py NAME=FILE [NAME=FILE ...] [--top N] [--json OUT]
  FILE: a json file, or a log whose "json: " line is the profile
"""
import argparse
import json
import re
import sys

# First match wins: the specific kinds before the generic elementwise and reduction kernels.
KINDS = [
    ("attention", r"flash|fmha|attention|sdpa"),
    ("matmul", r"gemm|gemv|cutlass|xmma|nvjet|cublas|wgmma|^aten::(mm|addmm|bmm|baddbmm|_scaled_mm)$"),
    ("layer norm", r"layer_?norm"),
    ("softmax, cross-entropy", r"softmax|nll_loss|cross_entropy"),
    ("fused by the compiler", r"^triton_|^Torch-Compiled|^CompiledFunction|CompiledFxGraph"),
    ("optimizer", r"adam|multi_tensor_apply"),
    ("copies and casts", r"memcpy|copy|_to_copy|\bcat\b|catarraybatched|cast"),
    ("fills", r"memset|fill|zero"),
    ("elementwise", r"elementwise|vectorized|unrolled|^aten::(add|mul|sub|div|gelu|where|sqrt|pow|neg|"
                    r"addcmul|addcdiv|lerp|clamp|masked_fill|bernoulli|exp|abs|rsqrt|threshold)"),
    ("reductions", r"reduce|^aten::(sum|mean|norm|linalg_vector_norm|max|min|amax)"),
    ("communication", r"nccl"),
]
LAUNCHES = re.compile(r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaGraphLaunch)")
SYNCS = re.compile(r"^(cudaStreamSynchronize|cudaDeviceSynchronize|cudaEventSynchronize|cudaMemcpy)$")


def kind(name):
    for k, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return k
    return "other"


def load(path):
    text = open(path).read()
    for line in text.splitlines():
        if line.startswith("json: "):
            return json.loads(line[len("json: "):])
    return json.loads(text)


def summarise(p):
    gpu = p.get("device_busy_s") is not None
    items = p["kernels"] if gpu else p["ops"]
    kinds = {}
    for r in items:
        k = kinds.setdefault(kind(r["name"]), {"s": 0.0, "count": 0.0})
        k["s"] += r["s"]
        k["count"] += r["count"]
    runtime = p.get("runtime", [])
    return {
        "gpu": gpu, "kinds": kinds, "wall_s": p["wall_s"], "device_busy_s": p.get("device_busy_s"),
        "launches": sum(r["count"] for r in runtime if LAUNCHES.match(r["name"])) if gpu else None,
        "syncs": sum(r["count"] for r in runtime if SYNCS.match(r["name"])) if gpu else None,
        "top": items,
        "parts": {r["name"]: {"s": r["s"], "count": r["count"]} for r in p.get("parts", [])},
    }


def ms(x):
    return "-" if x is None else f"{1e3 * x:.1f}"


def table(named, field, title):
    """Rows of s[field] (name: {s, count}) for every profile, the largest first."""
    keys = sorted({k for _, s in named for k in s[field]},
                  key=lambda k: -max(s[field].get(k, {"s": 0})["s"] for _, s in named))
    print(f"| {title} | " + " | ".join(n for n, _ in named) + " |")
    print("| --- |" + " --- |" * len(named))
    for k in keys:
        cells = [f"{ms(s[field][k]['s'])} ({s[field][k]['count']:.0f})" if k in s[field] else "-"
                 for _, s in named]
        print(f"| {k} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profiles", nargs="+", metavar="NAME=FILE")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--json", metavar="OUT", help="also write the grouped figures here")
    a = ap.parse_args()
    named = []
    for spec in a.profiles:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            sys.exit(f"profile_table: {spec!r}: expected NAME=FILE")
        try:
            named.append((name, summarise(load(path))))
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"profile_table: {path}: not a step profile ({e})")
    if len({s["gpu"] for _, s in named}) > 1:
        sys.exit("profile_table: GPU and CPU profiles cannot share one table")
    gpu = named[0][1]["gpu"]
    unit = "kernels" if gpu else "ops"
    print(f"\nper step: ms ({unit})" + ("" if gpu else ", CPU self time"))
    table(named, "kinds", "kind of work")
    print("| **wall time** | " + " | ".join(ms(s["wall_s"]) for _, s in named) + " |")
    if gpu:
        print("| device busy | " + " | ".join(
            f"{ms(s['device_busy_s'])} ({100 * s['device_busy_s'] / s['wall_s']:.0f} %)" for _, s in named) + " |")
        print("| kernel launches | " + " | ".join(f"{s['launches']:.0f}" for _, s in named) + " |")
        print("| host synchronisations | " + " | ".join(f"{s['syncs']:.0f}" for _, s in named) + " |")
    if any(s["parts"] for _, s in named):
        print(f"\nper step, by part of the step: ms ({unit})")
        table(named, "parts", "part")
    for name, s in named:
        print(f"\n{name}, largest {unit} per step:")
        for r in s["top"][:a.top]:
            print(f"  {ms(r['s']):>8} ms {r['count']:>7.0f}x  [{kind(r['name'])}] {r['name'][:90]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({n: {k: v for k, v in s.items() if k != "top"} for n, s in named}, f, indent=2)


if __name__ == "__main__":
    main()
