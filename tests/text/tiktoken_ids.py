"""The reference for wit's GPT-2 tokenizer: tiktoken (PyPI, its Rust core) with GPT-2's encoding
built from the rank file wit uses (deps/gpt2/gpt2.tiktoken), so nothing is fetched. Run with the
python of deps/venv (launch/install-deps).

  python tiktoken_ids.py RANKS file FILE     ids of FILE's bytes, space-separated, on one line
  python tiktoken_ids.py RANKS check JSONL   compares `wit tokenize --documents` output line by
                                             line; prints the first difference and exits 1
  python tiktoken_ids.py RANKS bench JSONL   encoding speed over the same documents (MB/s)

A str holds only valid text: as wit does, each byte that starts no valid UTF-8 sequence is its
own one-byte token, and the valid stretches between them are encoded.
"""
import base64
import json
import sys
import time

import tiktoken

# GPT-2's pattern, as tiktoken's own gpt2 and r50k_base encodings spell it.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


def encoding(ranks_file):
    ranks = {}
    with open(ranks_file, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding("gpt2-local", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)


def sequence(b, i):
    """Length of the valid UTF-8 sequence at b[i], 0 when none starts there (as wit decides)."""
    c = b[i]
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        n, cp = 2, c & 0x1F
    elif 0xE0 <= c <= 0xEF:
        n, cp = 3, c & 0x0F
    elif 0xF0 <= c <= 0xF4:
        n, cp = 4, c & 0x07
    else:
        return 0
    if i + n > len(b):
        return 0
    for k in range(1, n):
        if b[i + k] & 0xC0 != 0x80:
            return 0
        cp = (cp << 6) | (b[i + k] & 0x3F)
    if (n == 3 and cp < 0x800) or (n == 4 and (cp < 0x10000 or cp > 0x10FFFF)) or 0xD800 <= cp <= 0xDFFF:
        return 0
    return n


def encode_bytes(enc, b):
    out = []
    begin = i = 0
    while i < len(b):
        n = sequence(b, i)
        if n > 0:
            i += n
            continue
        if i > begin:
            out += enc.encode_ordinary(b[begin:i].decode("utf-8"))
        out.append(enc.encode_single_token(b[i:i + 1]))
        i += 1
        begin = i
    if len(b) > begin:
        out += enc.encode_ordinary(b[begin:].decode("utf-8"))
    return out


def documents(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                d["bytes"] = d["text"].encode("utf-8") if "text" in d else bytes.fromhex(d["text_hex"])
                yield d


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("file", "check", "bench"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    enc = encoding(sys.argv[1])
    mode, path = sys.argv[2], sys.argv[3]
    if mode == "file":
        with open(path, "rb") as f:
            print(" ".join(map(str, encode_bytes(enc, f.read()))))
    elif mode == "check":
        n = tokens = 0
        for d in documents(path):
            want, got = encode_bytes(enc, d["bytes"]), d["tokens"]
            if want != got:
                at = next((k for k, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
                print(f"DIFFERS: {d['source']}: token {at}: wit {got[at:at + 8]}, tiktoken {want[at:at + 8]} "
                      f"({len(got)} vs {len(want)} tokens)")
                sys.exit(1)
            n += 1
            tokens += len(want)
        print(f"{n} documents, {tokens} tokens: the same ids as tiktoken's gpt2")
    else:
        docs = list(documents(path))
        for d in docs[:50]:  # warm-up
            enc.encode_ordinary(d["text"])
        start = time.perf_counter()
        nbytes = ntokens = 0
        for d in docs:
            ntokens += len(enc.encode_ordinary(d["text"]))
            nbytes += len(d["bytes"])
        s = time.perf_counter() - start
        print(json.dumps({"bytes": nbytes, "tokens": ntokens, "seconds": s, "mb_per_s": nbytes / s / 1e6}))


if __name__ == "__main__":
    main()
