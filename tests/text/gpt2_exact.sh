#!/usr/bin/env bash
# wit's GPT-2 tokenizer against tiktoken's gpt2 encoding (PyPI tiktoken, its Rust reference core,
# built from the same local rank file; installed by launch/install-deps into deps/venv): the
# same ids for every document of the built-in corpus, for the Unicode torture text
# (tests/text/torture.sh) as one file and line by line as a JSONL corpus, and for pieces up to
# 20,000 bytes long (and one of a megabyte, which must not hang); decoding gives back
# the bytes; and bad input to `wit tokenize` and `wit prepare --tokenizer gpt2` is refused
# with a message, nothing written.
# Usage: gpt2_exact.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
python="$src/deps/venv/bin/python"
ranks="$src/deps/gpt2/gpt2.tiktoken"
"$python" -c "import tiktoken" 2>/dev/null && [ -f "$ranks" ] ||
  fail "tiktoken (PyPI, in deps/venv) or deps/gpt2/gpt2.tiktoken is missing: run launch/install-deps"
work=$(mktemp -d /tmp/wit-gpt2-XXXXXX)
trap 'rm -rf "$work"' EXIT
reference() { "$python" "$src/tests/text/tiktoken_ids.py" "$ranks" "$@"; }
source "$src/tests/text/torture.sh"

"$wit" tokenize --tokenizer gpt2 --documents >"$work/kjv.jsonl" || fail "wit tokenize --documents (built-in corpus)"
reference check "$work/kjv.jsonl" | tee "$work/kjv.check"
grep -q "the same ids as tiktoken" "$work/kjv.check" || fail "the built-in corpus differs"

torture_text "$work/torture.txt"
"$wit" tokenize --tokenizer gpt2 "$work/torture.txt" >"$work/wit.ids" || fail "wit tokenize (torture text)"
reference file "$work/torture.txt" >"$work/tiktoken.ids"
cmp -s "$work/wit.ids" "$work/tiktoken.ids" ||
  { diff <(tr ' ' '\n' <"$work/wit.ids") <(tr ' ' '\n' <"$work/tiktoken.ids") | head; fail "torture text differs"; }
echo "torture text: $(wc -w <"$work/wit.ids") tokens, the same ids as tiktoken's gpt2"
"$wit" tokenize --tokenizer gpt2 --decode "$work/wit.ids" >"$work/decoded" || fail "wit tokenize --decode"
cmp -s "$work/decoded" "$work/torture.txt" || fail "decoding does not give back the torture text's bytes"
echo "torture text: decoded back to its $(stat -c %s "$work/torture.txt") bytes"

# Long pieces, merged with a heap past 256 bytes (a scan per join would cost the square of the
# length): letters from small alphabets (many ties), mixed case, multi-byte letters, digits,
# whitespace and punctuation runs, each one GPT-2 piece. A megabyte of one letter must not hang.
python3 - "$work/long.txt" <<'PY'
import random
r = random.Random(7)
parts = []
for n in (257, 300, 1000, 5000, 20000):
    for alphabet in ("a", "ab", "abc", "aAbB", "etaoinshrdlu", "éèàçœ", "的一是不了人我在有他",
                     "0123456789", " \t", "!?.,;:-_()[]{}<>", "ab12 \n"):
        parts.append(" " + "".join(r.choice(alphabet) for _ in range(n)))
open(__import__("sys").argv[1], "w", encoding="utf-8").write("".join(parts))
PY
"$wit" tokenize --tokenizer gpt2 "$work/long.txt" >"$work/long.wit" || fail "wit tokenize (long pieces)"
reference file "$work/long.txt" >"$work/long.tiktoken"
cmp -s "$work/long.wit" "$work/long.tiktoken" ||
  { diff <(tr ' ' '\n' <"$work/long.wit") <(tr ' ' '\n' <"$work/long.tiktoken") | head; fail "long pieces differ"; }
head -c 1000000 /dev/zero | tr '\0' 'a' >"$work/one-letter.txt"
timeout 120 "$wit" tokenize --tokenizer gpt2 "$work/one-letter.txt" >"$work/one-letter.ids" ||
  fail "a megabyte of one letter (one piece) was not encoded within 2 minutes"
echo "long pieces: $(wc -w <"$work/long.wit") tokens, the same ids as tiktoken's gpt2; a 1 MB piece: $(wc -w <"$work/one-letter.ids") tokens"

# Each valid line of the torture text as a JSONL document (JSON strings hold only UTF-8).
python3 - "$work/torture.txt" "$work/torture.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
with open(sys.argv[2], "w") as out:
    for l in lines:
        try:
            out.write(json.dumps({"text": l.decode("utf-8") + "\n"}) + "\n")
        except UnicodeDecodeError:
            pass
PY
"$wit" tokenize --tokenizer gpt2 --documents "$work/torture.jsonl" >"$work/torture.docs" || fail "wit tokenize --documents (JSONL)"
reference check "$work/torture.docs" || fail "a JSONL document differs"

# prepare: GPT-2 shards of the torture text; bad input refused with nothing written.
"$wit" prepare "$work/torture.txt" --tokenizer gpt2 --out "$work/data" >/dev/null || fail "prepare --tokenizer gpt2"
/usr/bin/python3 - "$work/data/manifest.h5" <<'PY' || fail "the manifest does not record the gpt2 tokenizer"
import h5py, sys
a = h5py.File(sys.argv[1], "r").attrs
assert a["tokenizer"].decode() == "gpt2" and a["vocab_size"] == 50257 and a["eot_token"] == 50256
assert len(a["tokenizer_vocab"]) == 64
PY
printf '{"text": "fine"}\n{"text": broken\n' >"$work/bad.jsonl"
out=$("$wit" prepare "$work/bad.jsonl" --tokenizer gpt2 --out "$work/bad" 2>&1) && fail "a JSONL line that is not JSON was accepted"
grep -q "bad.jsonl:2" <<<"$out" || fail "the bad JSONL line is not named: $out"
[ -e "$work/bad" ] && fail "prepare wrote output for a bad JSONL file"
out=$("$wit" prepare "$work/torture.txt" --tokenizer gpt2 --vocab "$work/nowhere" --out "$work/novocab" 2>&1) &&
  fail "prepare without a vocabulary succeeded"
grep -q "launch/install-deps" <<<"$out" || fail "no install hint: $out"
[ -e "$work/novocab" ] && fail "prepare wrote output without a vocabulary"
echo "12 abc" >"$work/bad.ids"
out=$("$wit" tokenize --tokenizer gpt2 --decode "$work/bad.ids" 2>&1) && fail "decoding 'abc' succeeded"
grep -q "expected a token id" <<<"$out" || fail "bad id not named: $out"
echo "50257" >"$work/bad.ids"
out=$("$wit" tokenize --tokenizer gpt2 --decode "$work/bad.ids" 2>&1) && fail "decoding 50257 succeeded"
grep -q "outside the vocabulary" <<<"$out" || fail "id 50257 not refused: $out"
echo "bad input: refused with messages, nothing written"
echo "gpt2 exact: all passed"
