#!/usr/bin/env bash
# Training and verification across hosts: 2 and 4 "hosts" (network namespaces on a private
# bridge, tests/dist/netns_hosts.sh), Open MPI over TCP between them, launched with
# launch/mpi-hostfile. DDP on 2 hosts and FSDP on 4 give the one-process run's witness chain,
# `wit verify` certifies the 4-host run replaying on 1 process and on 2 hosts, and a rank killed
# on another host ends the job promptly, naming it, with a log that resumes to the same chain.
# Needs root (namespaces); skipped (exit 77) without it.
# Usage: multi_host.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
if [ "$(id -u)" -ne 0 ] || ! ip netns add "wit-probe-$$" 2>/dev/null; then
  echo "SKIP: needs root to create network namespaces"
  exit 77
fi
ip netns del "wit-probe-$$"
source "$src/tests/dist/netns_hosts.sh"
work=$(mktemp -d /tmp/wit-hosts-XXXXXX)
trap 'hosts_down; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
hosts_up 4 || fail "creating the hosts"
hosts_agent "$work/agent"
hosts_mpi_env "$work/agent"
hosts_file 2 "$work/hosts2"
hosts_file 4 "$work/hosts4"
export OMP_NUM_THREADS=1 LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" keygen --out "$work/verifier.pem" >/dev/null
"$wit" prepare --out "$work/data" >/dev/null || fail prepare
cfg="$src/configs/tiny.yaml"
sets=(--set data.dir="$work/data" --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
      --set model.context=32 --set model.dropout=0.1 --set data.seq_len=16 --set train.steps=6
      --set train.micro_batches=4 --set train.micro_batch_size=2 --set train.threads=1
      --set train.checkpoint_every=3 --set train.eval_every=3 --set witness.fingerprint_every=2)
heads() { "$wit" inspect "$1" --json | sed -n '/"heads"/,/}/p' | tr -d ' \n'; }
# launch/mpi-hostfile, started on host 1, with the binary under test.
hostfile_train() {  # HOSTFILE N ARGS...
  on_host 1 env WIT_BINARY="$wit" "$src/launch/mpi-hostfile" "$@"
}

"$wit" train "$cfg" "${sets[@]}" --out "$work/n1" -q >/dev/null || fail "train on one process"
ref=$(heads "$work/n1")
hostfile_train "$work/hosts2" 2 "$cfg" "${sets[@]}" --out "$work/h2" -q >"$work/h2.out" 2>&1 ||
  { cat "$work/h2.out"; fail "train on 2 hosts (ddp)"; }
hostfile_train "$work/hosts4" 4 "$cfg" "${sets[@]}" --set dist.mode=fsdp --out "$work/h4" -q \
  >"$work/h4.out" 2>&1 || { cat "$work/h4.out"; fail "train on 4 hosts (fsdp)"; }
for run in h2 h4; do
  [ "$(heads "$work/$run")" = "$ref" ] || fail "the witness chain of $run differs from one process's"
  "$wit" inspect "$work/$run" | grep -q "world size: ${run#h}" || fail "$run: not ${run#h} processes"
  echo "$run: trained across ${run#h} hosts over TCP, same witness chain as one process"
done

verify=(verify "$work/h4" --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" -c 8)
"$wit" "${verify[@]}" >"$work/v1.out" 2>&1 || { cat "$work/v1.out"; fail "verify of the 4-host run on 1 process"; }
grep -q "^CERTIFIED" "$work/v1.out" || fail "no CERTIFIED line on 1 process"
rm -f "$work/h4/certificate.json"
on_host 1 mpirun --hostfile "$work/hosts2" -np 2 --bind-to none "$wit" "${verify[@]}" \
  >"$work/v2.out" 2>&1 || { cat "$work/v2.out"; fail "verify of the 4-host run on 2 hosts"; }
grep -q "^CERTIFIED" "$work/v2.out" || fail "no CERTIFIED line on 2 hosts"
grep -q "replayed bit for bit on 2 process(es)" "$work/v2.out" || fail "verify: not 2 processes"
echo "h4: certified replaying on 1 process and on 2 hosts"
# A rank killed with SIGKILL on the other host mid-run: the job ends within a bound, naming the
# lost rank and its host; the witness log stays valid; the run resumes on the remaining host (one
# process) and ends with the same chain as an uninterrupted run.
long=(--set data.dir="$work/data" --set train.steps=16 --set train.checkpoint_every=4
      --set train.eval_every=0 --set witness.fingerprint_every=4 --set train.threads=1)
steps_of() { "$wit" inspect "$1" --json 2>/dev/null | sed -n 's/^  "steps": \([0-9]*\),$/\1/p'; }
hostfile_train "$work/hosts2" 2 "$cfg" "${long[@]}" --out "$work/kill" -q >"$work/kill.out" 2>&1 &
job=$!
victim=""
for _ in $(seq 600); do
  if [ "$(steps_of "$work/kill")" ] && [ "$(steps_of "$work/kill")" -ge 5 ]; then
    for pid in $(pgrep -f "$wit train"); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$pid
    done
    break
  fi
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
[ -n "$victim" ] || { cat "$work/kill.out"; fail "rank 1 was not found running"; }
kill -9 "$victim"
killed_at=$(date +%s)
for _ in $(seq 600); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
kill -0 $job 2>/dev/null && { kill -9 $job; fail "the job still runs 60 s after rank 1 was killed"; }
wait $job && fail "the job exited 0 after losing rank 1"
took=$(( $(date +%s) - killed_at ))
grep -q "rank 1 .*on node $hosts_subnet.12 exited on signal 9" "$work/kill.out" ||
  { cat "$work/kill.out"; fail "no message naming the lost rank and host"; }
"$wit" inspect "$work/kill" >/dev/null || fail "the log after a lost rank does not verify"
"$wit" train --resume "$work/kill" -q >/dev/null || fail "resume on the remaining host"
"$wit" train "$cfg" "${long[@]}" --out "$work/straight" -q >/dev/null || fail "uninterrupted run"
[ "$(heads "$work/kill")" = "$(heads "$work/straight")" ] || fail "the resumed chain differs"
echo "rank 1 killed on host 2: job ended in ${took}s (bound 60 s) naming it; resumed on 1 process, same chain"
echo "multi-host: all passed"
