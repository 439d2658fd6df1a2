#!/usr/bin/env python3
"""The peer wit's GPU step is measured against: the same GPT-2 in plain PyTorch (nanoGPT's
shape of model: pre-LayerNorm blocks, causal scaled-dot-product attention, tanh GELU, tied
embeddings; AdamW, gradient clipping, gradient accumulation over micro-batches), eager or under
torch.compile, with the shapes, optimizer settings and precision of a wit config (its
model.vocab_pad too: the embedding table rounded up to a multiple of it, as nanoGPT's 50,304 rows
for GPT-2's 50,257; the extra rows are never a target). For
benchmarking only: nothing here is witnessed or deterministic, and wit never imports it.

The tokens are drawn uniformly from the vocabulary with a fixed seed (a dense model's step time
does not depend on which tokens it reads). After --warmup steps (torch.compile compiles there),
--steps steps are timed one by one, the device synchronised around each; the last line is
  json: {"name", "mode", "tokens_per_step", "s_per_step", "tokens_per_s", "params",
         "peak_device_bytes", "warmup_s"}
with the median step. --profile FILE then profiles --profile-steps more steps (torch.profiler)
and writes where their time went, in the form of wit_bench_step_profile's json line (per step:
device kernels, runtime calls, operations' self time, and all of it by part of the step, named
as wit names its parts; benchmarks/profile_table.py compares them);
--trace FILE.json also keeps the profiler's Chrome trace.

Usage: torch_reference.py CONFIG [--set KEY=VALUE ...] [--mode eager|compile] [--device cuda|cpu]
                          [--precision bf16|fp32] [--steps N] [--warmup N] [--name NAME]
                          [--profile FILE [--profile-steps N] [--trace FILE.json]]
"""
import argparse
import bisect
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml


def config_from(path, sets):
    """A wit config (YAML) with --set KEY=VALUE overrides applied, as `wit train` reads them."""
    with open(path) as f:
        cfg = yaml.safe_load(f)
    for s in sets:
        if "=" not in s or "." not in s.split("=", 1)[0]:
            sys.exit(f"torch_reference: --set {s}: expected SECTION.KEY=VALUE")
        key, value = s.split("=", 1)
        section, name = key.split(".", 1)
        cfg.setdefault(section, {})[name] = yaml.safe_load(value)
    return cfg


def padded_vocab(m):
    """The embedding table's rows: model.vocab_size rounded up to model.vocab_pad, as wit does."""
    pad = int(m.get("vocab_pad", 1))
    return (m["vocab_size"] + pad - 1) // pad * pad


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, m):
        super().__init__()
        d = m["n_embd"]
        self.wte = nn.Embedding(padded_vocab(m), d)
        self.wpe = nn.Embedding(m["context"], d)
        self.blocks = nn.ModuleList(Block(d, m["n_head"]) for _ in range(m["n_layer"]))
        self.ln_f = nn.LayerNorm(d)
        # GPT-2's initialisation; the output head is the token embedding (tied).
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.zeros_(p) if name.endswith("bias") else nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * m["n_layer"]) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--name", default="")
    ap.add_argument("--profile", metavar="FILE", help="profile steps after the timed ones, summary here")
    ap.add_argument("--profile-steps", type=int, default=2)
    ap.add_argument("--trace", metavar="FILE", help="with --profile: the Chrome trace")
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < 0 or a.profile_steps < 1:
        sys.exit("torch_reference: --steps and --profile-steps must be >= 1 and --warmup >= 0")
    if a.trace and not a.profile:
        sys.exit("torch_reference: --trace needs --profile")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_reference: --device cuda, but this torch sees no GPU")
    cfg = config_from(a.config, a.set)
    m, tr, op = cfg["model"], cfg["train"], cfg["optim"]
    T, B, M = cfg["data"]["seq_len"], tr["micro_batch_size"], tr["micro_batches"]
    dev = torch.device(a.device)
    torch.manual_seed(1)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    model = GPT(m).to(dev)
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": op["weight_decay"]}, {"params": rest, "weight_decay": 0.0}],
        lr=op["lr"], betas=(op["beta1"], op["beta2"]), eps=op["eps"],
        **({"fused": True} if a.device == "cuda" else {"foreach": True}))
    step_model = torch.compile(model) if a.mode == "compile" else model
    gen = torch.Generator(device="cpu").manual_seed(2)
    batches = [torch.randint(0, m["vocab_size"], (B, T + 1), generator=gen).to(dev) for _ in range(M)]
    autocast = torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16")

    # The parts of a step carry the names of wit's (trainer/step.cpp), for the profile's table.
    part = lambda name: torch.profiler.record_function(PART + name)

    def step():
        with part("gradients"):
            opt.zero_grad(set_to_none=True)
        for mb in batches:
            with part("forward_backward"):
                with autocast:
                    loss = step_model(mb[:, :-1], mb[:, 1:]) / M
                loss.backward()
        with part("norm_clip"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), op["grad_clip"])
        with part("adamw"):
            opt.step()
        return loss

    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    if a.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for i in range(a.warmup):
        step()
        print(f"torch_reference: warm-up step {i + 1}/{a.warmup}", file=sys.stderr, flush=True)
    sync()
    warmup_s = time.perf_counter() - start
    times = []
    for i in range(a.steps):
        sync()
        t0 = time.perf_counter()
        loss = step()
        sync()
        times.append(time.perf_counter() - t0)
        print(f"torch_reference: step {i + 1}/{a.steps} {times[-1]:.3f} s, loss {loss.item() * M:.3f}",
              file=sys.stderr, flush=True)
    s = statistics.median(times)
    tokens = B * T * M
    out = {"name": a.name or f"torch-{a.mode}", "mode": a.mode, "tokens_per_step": tokens,
           "s_per_step": s, "tokens_per_s": tokens / s, "params": params,
           "peak_device_bytes": torch.cuda.max_memory_allocated() if a.device == "cuda" else None,
           "warmup_s": warmup_s}
    print(f"{out['name']}: {tokens} tokens/step, {s:.4f} s/step, {tokens / s:,.0f} tokens/s "
          f"({params:,} parameters, warm-up {warmup_s:.1f} s)")
    print("json: " + json.dumps(out))
    if a.profile:
        summary = profile_steps(step, sync, a.profile_steps, a.device == "cuda", a.trace)
        summary.update({"source": f"torch-{a.mode}", "config": a.config, "device": a.device,
                        "precision": a.precision, "micro_batches": M, "micro_batch_size": B,
                        "seq_len": T})
        with open(a.profile, "w") as f:
            json.dump(summary, f)
        print(f"profile of {a.profile_steps} steps: {a.profile}")


PART = "ref::step::"


def profile_steps(step, sync, n, cuda, trace):
    """Where n steps' time went, per step: the device's kernels, copies and memsets (and the
    time it was busy at all), the CUDA runtime calls, and the host operations' self time."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync()
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        wall = time.perf_counter() - t0
    kernels, runtime, ops, parts, spans = {}, {}, {}, {}, []
    def add(table, name, us):
        c, t = table.get(name, (0, 0.0))
        table[name] = (c + 1, t + us)
    events = prof.events()
    # The part whose span holds a time (the parts follow one another), as wit's profile does it.
    part_spans = sorted((e.time_range.start, e.time_range.end, e.name[len(PART):])
                        for e in events if e.device_type == DeviceType.CPU and e.name.startswith(PART))
    part_begins = [b for b, _, _ in part_spans]
    def part_at(t):
        i = bisect.bisect_right(part_begins, t) - 1
        return part_spans[i][2] if i >= 0 and t < part_spans[i][1] else "outside the parts"
    for e in events:
        if e.device_type != DeviceType.CPU:
            add(kernels, e.name, e.time_range.elapsed_us())
            spans.append((e.time_range.start, e.time_range.end))
            continue
        add(runtime if e.name.startswith("cu") else ops, e.name, e.self_cpu_time_total)
        if cuda:  # each kernel in the part of the operation that launched it
            for k in e.kernels:
                add(parts, part_at(e.time_range.start), k.duration)
        else:
            add(parts, part_at(e.time_range.start), e.self_cpu_time_total)
    busy, end = 0.0, float("-inf")  # the union of the device's spans
    for b, e in sorted(spans):
        if e > end:
            busy += e - max(b, end)
            end = e
    rows = lambda t: sorted(({"name": k, "count": c / n, "s": 1e-6 * us / n} for k, (c, us) in t.items()),
                            key=lambda r: -r["s"])
    if trace:
        prof.export_chrome_trace(trace)
    return {"steps": n, "wall_s": wall / n, "device_busy_s": 1e-6 * busy / n if cuda else None,
            "kernels": rows(kernels), "runtime": rows(runtime), "ops": rows(ops), "parts": rows(parts)}


if __name__ == "__main__":
    main()
