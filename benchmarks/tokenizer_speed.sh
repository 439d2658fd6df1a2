#!/usr/bin/env bash
# GPT-2 tokenizer and sampling speed:
#   1. encoding throughput on one core (taskset -c 0) over every document of the built-in
#      corpus: wit's tokenizer (`wit tokenize --documents --stats`, encoding time only) against
#      PyPI tiktoken (its Rust core, from python) on the same documents
#      (tests/text/tiktoken_ids.py bench), alternating, five rounds each; the median of each and
#      their ratio;
#   2. one 1 MB piece (a megabyte of one letter, and of random letters) through `wit tokenize`;
#   3. `wit prepare --tokenizer gpt2` end to end on the corpus, against the byte tokenizer;
#   4. `wit sample` tokens/s from a GPT-2 small (124M) model (one tiny training step), 256
#      tokens, greedy and at temperature 1.
# Usage: benchmarks/tokenizer_speed.sh   (after launch/build; tiktoken from launch/install-deps)
set -euo pipefail
cd "$(dirname "$0")/.."
wit=${WIT_BUILD_DIR:-build}/apps/wit/wit
work=$(mktemp -d /tmp/wit-tok-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null

"$wit" tokenize --tokenizer gpt2 --documents >"$work/docs.jsonl"
wit_runs=() ref_runs=()
for round in 1 2 3 4 5; do
  w=$(taskset -c 0 "$wit" tokenize --tokenizer gpt2 --documents --stats 2>&1 >/dev/null | sed -n 's/.*(\([0-9.]*\) MB\/s.*/\1/p')
  r=$(taskset -c 0 deps/venv/bin/python tests/text/tiktoken_ids.py deps/gpt2/gpt2.tiktoken bench "$work/docs.jsonl" |
      sed -n 's/.*"mb_per_s": \([0-9.]*\).*/\1/p' | xargs printf '%.2f')
  echo "round $round: wit $w MB/s, tiktoken (Rust, PyPI) $r MB/s"
  wit_runs+=("$w") ref_runs+=("$r")
done
median() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
w=$(median "${wit_runs[@]}") r=$(median "${ref_runs[@]}")
echo "encoding, one core, $(stat -c %s "$work/docs.jsonl" | awk '{printf "%.1f", $1/1e6}') MB of JSON lines ($(wc -l <"$work/docs.jsonl") documents): wit $w MB/s, tiktoken $r MB/s: $(awk -v a="$w" -v b="$r" 'BEGIN{printf "%.2f", a/b}')x"

# One long piece (a run of letters is one GPT-2 piece): merged with a heap past 256 bytes, so a
# megabyte takes about as long as a megabyte of ordinary text, not the square of its length.
head -c 1000000 /dev/zero | tr '\0' 'a' >"$work/one-letter.txt"
/usr/bin/python3 -c "import random; r = random.Random(1); print(''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(1000000)), end='')" >"$work/letters.txt"
for f in one-letter letters; do
  start=$(date +%s.%N)
  n=$(taskset -c 0 "$wit" tokenize --tokenizer gpt2 "$work/$f.txt" | wc -w)
  echo "one 1 MB piece ($f): $n tokens in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}') s"
done

for tok in byte gpt2; do
  start=$(date +%s.%N)
  "$wit" prepare --tokenizer $tok --out "$work/data-$tok" >"$work/prepare-$tok.out"
  echo "prepare --tokenizer $tok: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.2f", e-s}') s end to end, $(tail -2 "$work/prepare-$tok.out" | head -1 | sed 's/.*), //')"
done

"$wit" train configs/gpt2-124m-kjv.yaml --set data.dir="$work/data-gpt2" --set train.steps=1 \
  --set train.micro_batches=1 --set train.micro_batch_size=1 --set data.seq_len=32 \
  --set train.eval_batches=1 --set train.threads="$(nproc)" --out "$work/run" -q >/dev/null
for t in 0 1; do
  "$wit" sample "$work/run" -p "And God said" -n 256 -t $t --stats 2>&1 >/dev/null | sed "s/^/sample 124M, temperature $t: /"
done
# What bounds sampling: each token reads every fp32 weight once (4 bytes x 124M).
/usr/bin/python3 -c "
import numpy as np, time
a = np.ones(125_000_000, np.float32); a.sum()
t = time.perf_counter()
for _ in range(5): a.sum()
print(f'memory: one core reads {a.nbytes / ((time.perf_counter() - t) / 5) / 1e9:.1f} GB/s (numpy sum of 500 MB)')"
