"""The tokenizer files wit writes beside model.safetensors, loaded by transformers (the fast
tokenizer AutoTokenizer picks and the slow GPT2Tokenizer), encode each text to the ids
`wit tokenize` gives with the run's tokenizer, and decode them back to the text.

  python hf_tokenizer.py RUN_DIR TEXT_FILE IDS_FILE [TEXT_FILE IDS_FILE ...]
"""
import sys

from transformers import AutoTokenizer, GPT2Tokenizer

run, files = sys.argv[1], sys.argv[2:]
tokenizers = {"fast": AutoTokenizer.from_pretrained(run), "slow": GPT2Tokenizer.from_pretrained(run)}
if not tokenizers["fast"].is_fast:
    print(f"FAIL: {run}: AutoTokenizer gave a slow tokenizer")
    sys.exit(1)
total = 0
for text_file, ids_file in zip(files[::2], files[1::2]):
    with open(text_file, encoding="utf-8") as f:
        text = f.read()
    with open(ids_file) as f:
        want = [int(x) for x in f.read().split()]
    for name, tok in tokenizers.items():
        got = tok.encode(text)
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            print(f"FAIL: {run}: {name} tokenizer on {text_file}: ids differ at {k}: "
                  f"transformers {got[k:k + 8]}, wit {want[k:k + 8]}")
            sys.exit(1)
        back = tok.decode(got)
        if back != text:
            print(f"FAIL: {run}: {name} tokenizer does not decode {text_file} back to its text: {back[:80]!r}")
            sys.exit(1)
    total += len(want)
print(f"{run}: transformers' fast and slow tokenizers give wit's {total} ids for {len(files) // 2} texts")
