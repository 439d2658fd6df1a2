#!/usr/bin/env python3
"""Writes a small multiple-choice set in HellaSwag's file format from the King James Bible (the
built-in corpus): each example is the first half of a verse, its own second half among three
second halves of other verses, the right one at a position drawn from a fixed seed.

Usage: kjv_choice.py OUT.jsonl [EXAMPLES]   (needs `bible` from Debian's bible-kjv)
"""
import json
import random
import subprocess
import sys

out, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
text = subprocess.run(["bible", "-f", "Gen1:1-Gen3:24"], check=True, capture_output=True,
                      text=True).stdout
verses = []
for line in text.splitlines():
    ref, _, verse = line.partition(" ")
    words = verse.split()
    if len(words) < 8 or len(verse) > 180:
        continue
    half = len(words) // 2
    verses.append((ref, " ".join(words[:half]), " ".join(words[half:])))
rng = random.Random(20261206)
rng.shuffle(verses)
if len(verses) < count:
    sys.exit(f"only {len(verses)} verses fit")
with open(out, "w") as f:
    for i, (ref, ctx, right) in enumerate(verses[:count]):
        others = [v[2] for v in verses if v[0] != ref]
        endings = rng.sample(others, 3)
        label = rng.randrange(4)
        endings.insert(label, right)
        f.write(json.dumps({"ind": i, "activity_label": "KJV " + ref, "ctx": ctx,
                            "endings": endings, "label": label, "split": "val"}) + "\n")
