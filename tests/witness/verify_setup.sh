# Sourced by the verifier's test scripts (arguments: WIT_BINARY DISHONEST_BINARY SOURCE_DIR):
# a scratch directory removed on exit, fail(), a trainer key (WIT_SIGNING_KEY) and a verifier
# key, the built-in corpus in $work/data, and `sets`: a tiny 12-step run in 4 segments
# (checkpoints every 3 steps), so that 40 challenges replay every segment.
set -uo pipefail
wit=$1
liar=$2
src=$3
work=$(mktemp -d /tmp/wit-verify-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" keygen --out "$work/verifier.pem" >/dev/null
"$wit" prepare --out "$work/data" >/dev/null || fail prepare
sets=(--set data.dir="$work/data" --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
      --set model.context=32 --set model.dropout=0.1 --set data.seq_len=16 --set train.steps=12
      --set train.micro_batches=4 --set train.micro_batch_size=2 --set train.threads=1
      --set train.checkpoint_every=3 --set train.eval_every=6 --set witness.fingerprint_every=2)
cfg="$src/configs/tiny.yaml"
mpirun="mpirun --oversubscribe --bind-to none -np"
# The verifier with its key, requiring the trainer's key, challenging every segment.
verify() { "$wit" verify "$1" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" -c 40 "${@:2}"; }
# The lie in $work/lie is a well-formed log that `wit verify` rejects, writing no certificate,
# with a REJECTED line matching REASON (a grep pattern).
check_rejected() {  # NAME REASON
  "$wit" inspect "$work/lie" >/dev/null || fail "$1: the forged log is not well-formed"
  if verify "$work/lie" >"$work/lie.out" 2>&1; then cat "$work/lie.out"; fail "$1 was certified"; fi
  [ -f "$work/lie/certificate.json" ] && fail "$1: a certificate was written"
  grep -q "REJECTED: $2" "$work/lie.out" || { cat "$work/lie.out"; fail "$1: expected '$2'"; }
  echo "lie $1: $(grep REJECTED "$work/lie.out")"
}
