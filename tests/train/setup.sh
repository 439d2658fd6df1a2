# Sourced by the training tests' scripts, after they set wit (the binary) and src (the source
# directory): a scratch directory $work removed on exit, fail(), the venv's python, a trainer key
# (WIT_SIGNING_KEY) and a verifier key ($work/verifier.pem), transformers kept offline, and the
# built-in corpus prepared into $work/data.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
python="$src/deps/venv/bin/python"
work=$(mktemp -d "/tmp/wit-$(basename "$0" .sh)-XXXXXX")
trap 'rm -rf "$work"' EXIT
export WIT_SIGNING_KEY="$work/key.pem" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null || fail "keygen"
"$wit" keygen --out "$work/verifier.pem" >/dev/null || fail "keygen (verifier)"
"$wit" prepare --out "$work/data" >/dev/null || fail "prepare"
