#!/usr/bin/env bash
# A run's TensorBoard event files, read by TensorBoard's own reader (PyPI tensorboard in
# deps/venv): the training and val scalars are there, at the steps and with the values of
# metrics.jsonl.
# Usage: tensorboard.sh WIT_BINARY SOURCE_DIR
wit=$1 src=$2
source "$(dirname "$0")/setup.sh"
"$python" -c "import tensorboard" 2>/dev/null || fail "tensorboard (PyPI) is missing from deps/venv: run launch/install-deps"
"$wit" train "$src/configs/tiny.yaml" --set data.dir="$work/data" --set model.n_layer=1 --set model.n_embd=32 \
  --set model.n_head=2 --set train.steps=20 --set train.log_every=5 --set train.eval_every=10 \
  --set train.checkpoint_every=10 --out "$work/run" -q >/dev/null || fail train
ls "$work/run/tensorboard/"events.out.tfevents.* >/dev/null 2>&1 || fail "no event file in RUN/tensorboard"
"$python" - "$work/run" <<'PY' || fail "the event files disagree with metrics.jsonl"
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run = sys.argv[1]
acc = EventAccumulator(run + "/tensorboard")
acc.Reload()
tags = set(acc.Tags()["scalars"])
for tag in ("train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "train/mfu", "val/loss"):
    assert tag in tags, (tag, tags)
want = {}
for line in open(run + "/metrics.jsonl"):
    m = json.loads(line)
    for k, v in m.items():
        if k != "step":
            want.setdefault(k, []).append((m["step"], v))
for key, tag in (("loss", "train/loss"), ("lr", "train/lr"), ("val_loss", "val/loss")):
    got = [(e.step, e.value) for e in acc.Scalars(tag)]
    assert [s for s, _ in got] == [s for s, _ in want[key]], (tag, got, want[key])
    for (_, a), (_, b) in zip(got, want[key]):
        assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), (tag, a, b)
print(f"tensorboard: {len(tags)} scalar tags; train/loss at steps {[e.step for e in acc.Scalars('train/loss')]}, "
      f"val/loss at {[e.step for e in acc.Scalars('val/loss')]}, equal to metrics.jsonl")
PY
echo "tensorboard: all passed"
