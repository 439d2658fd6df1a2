#!/usr/bin/env bash
# Training and verification across hosts: 2 and 4 "hosts" (network namespaces on a private
# bridge, tests/dist/netns_hosts.sh), Open MPI over TCP between them, launched with
# launch/mpi-hostfile. DDP on 2 hosts and FSDP on 4 give the one-process run's witness chain,
# and `wit verify` certifies the 4-host run replaying on 1 process and on 2 hosts. Faults, each
# ending the job within a stated bound with a message naming the rank or host, the log valid
# and resumable to the same chain: a rank killed with SIGKILL on another host, a host whose
# link goes down mid-run, a rank that stalls, a host unreachable at launch (nothing written).
# The same for `wit verify` as an MPI job: a checkpoint corrupt in one host's view ends every
# rank with one verdict naming that rank, and a killed verifier rank ends the job; neither
# leaves a certificate.
# Needs root (namespaces); skipped (exit 77) without it.
# Usage: multi_host.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
source "$src/tests/dist/netns_hosts.sh"
hosts_need_root || exit 77
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
source "$src/tests/dist/tiny_runs.sh"
tiny_sets "$work/data"
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
# Faults, on a 16-step run. Each ends the job within a bound with a message naming the lost
# rank or host; the witness log stays valid; the run resumes on the remaining host (one
# process) and ends with the same chain as an uninterrupted run.
# Long enough (about a second a step on the pinned CPU numerics) that the run still goes on when a
# fault hits it at step 5, and short enough that each resume is quick.
long=(--set data.dir="$work/data" --set train.steps=16 --set train.checkpoint_every=4
      --set train.eval_every=0 --set witness.fingerprint_every=4 --set train.threads=1)
"$wit" train "$cfg" "${long[@]}" --out "$work/straight" -q >/dev/null || fail "uninterrupted run"
straight=$(heads "$work/straight")
# Waits for training job $1 to end, at most $2 s; prints the seconds it took from $3.
ended_within() {  # PID SECONDS START
  for _ in $(seq $(( $2 * 10 ))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$1" 2>/dev/null && { kill -9 "$1"; return 1; }
  echo $(( $(date +%s) - $3 ))
}
# Starts the long run on 2 hosts in the background (job pid in $job) and waits for step 5.
start_long() {  # RUN
  hostfile_train "$work/hosts2" 2 "$cfg" "${long[@]}" --out "$work/$1" -q >"$work/$1.out" 2>&1 &
  job=$!
  for _ in $(seq 600); do
    [ "$(steps_of "$work/$1")" ] && [ "$(steps_of "$work/$1")" -ge 5 ] && return 0
    kill -0 $job 2>/dev/null || break
    sleep 0.1
  done
  cat "$work/$1.out"
  fail "$1: the run did not reach step 5"
}
# The pid of rank R of the processes matching PATTERN, waiting a few seconds for it to show.
find_rank() {  # PATTERN R
  local pid=""
  for _ in $(seq 50); do
    pid=$(rank_pid "$1" "$2")
    [ -n "$pid" ] && break
    sleep 0.1
  done
  echo "$pid"
}
# A log that verifies through its last complete record, resumed on host 1 alone: the same chain
# as the uninterrupted run.
resumes_to_same_chain() {  # RUN
  "$wit" inspect "$work/$1" >/dev/null || fail "$1: the log does not verify"
  "$wit" train --resume "$work/$1" -q >/dev/null || fail "$1: resume on the remaining host"
  [ "$(heads "$work/$1")" = "$straight" ] || fail "$1: the resumed chain differs"
}

# Rank 1 killed with SIGKILL on host 2 mid-run: mpirun sees it die.
start_long kill
# Only this job's processes: other tests may run the same binary under mpirun meanwhile.
victim=$(find_rank "$wit train .*--out $work/kill " 1)
[ -n "$victim" ] || { cat "$work/kill.out"; fail "rank 1 was not found running"; }
kill -9 "$victim"
took=$(ended_within $job 60 "$(date +%s)") || fail "the job still runs 60 s after rank 1 was killed"
wait $job && fail "the job exited 0 after losing rank 1"
grep -q "rank 1 .*on node $hosts_subnet.12 exited on signal 9" "$work/kill.out" ||
  { cat "$work/kill.out"; fail "no message naming the lost rank and host"; }
resumes_to_same_chain kill
echo "rank 1 killed on host 2: job ended in ${took}s (bound 60 s) naming it; resumed on 1 process, same chain"

# Host 2's link goes down mid-step: launch/mpi-hostfile's keepalives (10 s idle + 3 x 5 s) end
# the job, mpirun naming the host.
start_long linkdown
ip -n "${hosts_prefix}h2" link set eth0 down
took=$(ended_within $job 90 "$(date +%s)") || fail "the job still runs 90 s after host 2's link went down"
wait $job && fail "the job exited 0 after losing host 2"
grep -q "lost communication with a remote daemon" "$work/linkdown.out" &&
  grep -q "Remote daemon.* on node $hosts_subnet.12" "$work/linkdown.out" ||
  { cat "$work/linkdown.out"; fail "no message naming the lost host"; }
ip -n "${hosts_prefix}h2" link set eth0 up
resumes_to_same_chain linkdown
echo "host 2's link down: job ended in ${took}s (bound 90 s) naming host $hosts_subnet.12; resumed, same chain"

# Rank 1 stalls (SIGSTOP) with its host and link up: rank 0's collective timeout ends the job,
# naming the rank and host it waited on.
export WIT_COLLECTIVE_TIMEOUT=10
start_long stalled
victim=$(find_rank "$wit train .*--out $work/stalled " 1)
[ -n "$victim" ] || { cat "$work/stalled.out"; fail "rank 1 was not found running"; }
kill -STOP "$victim"
took=$(ended_within $job 60 "$(date +%s)") || fail "the job still runs 60 s after rank 1 stalled"
wait $job && fail "the job exited 0 with rank 1 stalled"
grep -q "rank 0 on host h1: .* has waited 10 s for rank 1 on host h2" "$work/stalled.out" ||
  { cat "$work/stalled.out"; fail "no message naming the stalled rank"; }
unset WIT_COLLECTIVE_TIMEOUT
resumes_to_same_chain stalled
echo "rank 1 stalled on host 2: rank 0 ended the job in ${took}s (WIT_COLLECTIVE_TIMEOUT=10), naming it; resumed, same chain"

# A host that never comes up (unreachable from the start): the launch fails within seconds,
# naming it, and writes nothing.
hosts_file 3 "$work/hosts3"
hosts_unplug 3
start=$(date +%s)
hostfile_train "$work/hosts3" 3 "$cfg" "${long[@]}" --out "$work/never" -q >"$work/never.out" 2>&1 &
job=$!
took=$(ended_within $job 120 "$start") || fail "the launch still runs 120 s after it started"
wait $job && fail "the launch exited 0 without host 3"
grep -q "Local host: *h3" "$work/never.out" || { cat "$work/never.out"; fail "no message naming host 3"; }
[ -e "$work/never" ] && fail "a run directory was written without host 3"
echo "host 3 unreachable at launch: failed in ${took}s naming h3, nothing written"

# wit verify as an MPI job, one rank failing alone: host 2 sees a corrupted copy of a checkpoint
# (a bind mount over the shared file), which only host 2 loads. Every rank ends with the same
# verdict, rank 0 reports it naming rank 1, no hang and no certificate.
# Checkpoints after steps 3, 6 and 9: the structure stage has rank 0 hash the last one (rank r
# hashes every N-th from the r-th), and the model stage has every rank load it.
"$wit" train "$cfg" "${sets[@]}" --set train.steps=9 --out "$work/vbad" -q >/dev/null ||
  fail "train the run to verify"
ckpt=checkpoints/step_00000009.ckpt
cp "$work/vbad/$ckpt" "$work/bad-ckpt"
size=$(stat -c %s "$work/bad-ckpt")
printf '\x5a' | dd of="$work/bad-ckpt" bs=1 seek=$(( size - 100 )) conv=notrunc status=none
hosts_bind 2 "$work/bad-ckpt" "$work/vbad/$ckpt" "$work/agent"
start=$(date +%s)
on_host 1 mpirun --hostfile "$work/hosts2" -np 2 --bind-to none "$wit" verify "$work/vbad" \
  --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" -c 4 >"$work/vbad.out" 2>&1 &
job=$!
took=$(ended_within $job 60 "$start") || fail "verify still runs 60 s with one host's checkpoint corrupt"
wait $job && fail "verify exited 0 with one host's checkpoint corrupt"
grep -q "rank 1 of 2: .*$ckpt" "$work/vbad.out" || { cat "$work/vbad.out"; fail "no verdict naming rank 1"; }
grep -q "CERTIFIED" "$work/vbad.out" && fail "certified with one host's checkpoint corrupt"
[ -e "$work/vbad/certificate.json" ] && fail "a certificate was written"
echo "verify with a checkpoint corrupt on host 2 only: every rank ended in ${took}s, rank 0 naming rank 1, no certificate"

# A verifier rank killed on host 2 mid-replay: the job ends naming it, no certificate.
rm -f "$work/kill/certificate.json"
on_host 1 mpirun --hostfile "$work/hosts2" -np 2 --bind-to none "$wit" verify "$work/kill" \
  --key "$work/verifier.pem" --trainer-key "$WIT_SIGNING_KEY.pub" -c 32 >"$work/vkill.out" 2>&1 &
job=$!
for _ in $(seq 600); do
  grep -q "^structure" "$work/vkill.out" && break
  kill -0 $job 2>/dev/null || break
  sleep 0.05
done
victim=$(find_rank "$wit verify $work/kill " 1)
[ -n "$victim" ] || { cat "$work/vkill.out"; fail "verifier rank 1 was not found running"; }
kill -9 "$victim"
took=$(ended_within $job 60 "$(date +%s)") || fail "verify still runs 60 s after rank 1 was killed"
wait $job && fail "verify exited 0 after losing rank 1"
grep -q "rank 1 .*on node $hosts_subnet.12 exited on signal 9" "$work/vkill.out" ||
  { cat "$work/vkill.out"; fail "no message naming the lost verifier rank"; }
[ -e "$work/kill/certificate.json" ] && fail "a certificate was written after losing rank 1"
echo "verifier rank 1 killed on host 2: job ended in ${took}s naming it, no certificate"
echo "multi-host: all passed"
