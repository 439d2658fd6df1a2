"""A wit run's model.safetensors, loaded by transformers' GPT2LMHeadModel from the config.json wit
writes beside it, computes what wit computes: the same next-token logits (to 1e-5) for each
prompt, and greedy decoding picks the same tokens as `wit sample --temperature 0`.

  python hf_transformers.py RUN_DIR WIT_LOGITS.json ...   (files from `wit sample --logits`)
"""
import json
import sys

import torch
from transformers import GPT2LMHeadModel

run, files = sys.argv[1], sys.argv[2:]
model = GPT2LMHeadModel.from_pretrained(run, torch_dtype=torch.float32)
model.eval()
worst = 0.0
for f in files:
    with open(f) as fh:
        w = json.load(fh)
    ids = torch.tensor([w["prompt"]])
    with torch.no_grad():
        logits = model(ids).logits[0, -1].double()
    want = torch.tensor(w["logits"], dtype=torch.float64)
    diff = (logits - want).abs().max().item()
    worst = max(worst, diff)
    if diff > 1e-5:
        print(f"FAIL: {f}: logits differ by {diff:.3g} (over 1e-5)")
        sys.exit(1)
    n = len(w["drawn"])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=n, do_sample=False, num_beams=1,
                             eos_token_id=model.config.eos_token_id, pad_token_id=model.config.eos_token_id,
                             attention_mask=torch.ones_like(ids))
    drawn = out[0, ids.shape[1]:].tolist()
    if drawn != w["drawn"]:
        k = next((i for i, (a, b) in enumerate(zip(drawn, w["drawn"])) if a != b), min(len(drawn), n))
        print(f"FAIL: {f}: greedy decoding differs at token {k}: transformers {drawn[k:k + 8]}, wit {w['drawn'][k:k + 8]}")
        sys.exit(1)
    print(f"{f}: {len(w['prompt'])}-token prompt, logits within {diff:.2g}, the same {n} greedy tokens")
print(f"transformers: all {len(files)} prompts agree (largest logit difference {worst:.2g})")
