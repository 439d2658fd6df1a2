#!/usr/bin/env bash
# wit under a real Slurm: two nodes (network namespaces with slurmd each, slurmctld and munged:
# tests/dist/slurm_cluster.sh). `sbatch launch/slurm.sbatch` trains across both nodes with srun
# (PMIx) and with mpirun inside the allocation, and the witness chain equals one process's;
# squeue shows the job while it runs; a job cancelled with scancel mid-run leaves a valid log,
# and `--resume` under a new sbatch on one node continues it bit for bit.
# Needs root, slurm-wlm and munge; skipped (exit 77) without them.
# Usage: slurm.sh WIT_BINARY SOURCE_DIR
set -uo pipefail
wit=$1
src=$2
for tool in slurmctld slurmd munged sbatch; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed (launch/install-deps)"; exit 77; }
done
source "$src/tests/dist/netns_hosts.sh"
hosts_need_root || exit 77
source "$src/tests/dist/slurm_cluster.sh"
work=$(mktemp -d /tmp/wit-slurm-XXXXXX)
chmod 755 "$work"
trap 'slurm_down; hosts_down; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
hosts_up 2 || fail "creating the hosts"
slurm_up "$work/slurm" 2 1 || fail "starting Slurm"
echo "slurm: nodes $(on_slurm sinfo -h -o '%N %T')"
export OMP_NUM_THREADS=1 WIT_BINARY="$wit"
export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include="$hosts_subnet.0/24"
export OMPI_MCA_oob_tcp_if_include="$hosts_subnet.0/24"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export WIT_SIGNING_KEY="$work/trainer.pem"
"$wit" keygen --out "$WIT_SIGNING_KEY" >/dev/null
"$wit" prepare --out "$work/data" >/dev/null || fail prepare
cfg="$src/configs/tiny.yaml"
source "$src/tests/dist/tiny_runs.sh"
tiny_sets "$work/data"
state_of() { on_slurm scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# sbatch from the repository root; prints the job id.
submit() {
  (cd "$src" && on_slurm sbatch --parsable --output="$work/slurm-%j.out" "$@")
}
wait_job() {  # ID SECONDS: until the job has left the queue; prints its final state
  local s
  for _ in $(seq $(( $2 * 5 ))); do
    s=$(state_of "$1")
    case "$s" in PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.2 ;; *) echo "$s"; return ;; esac
  done
  echo "TIMEOUT"
}

"$wit" train "$cfg" "${sets[@]}" --out "$work/n1" -q >/dev/null || fail "train on one process"
ref=$(heads "$work/n1")
for launch in srun mpirun; do
  job=$(WIT_LAUNCH=$launch submit --nodes=2 --ntasks-per-node=1 launch/slurm.sbatch "$cfg" \
    "${sets[@]}" --out "$work/$launch" -q) || fail "sbatch ($launch)"
  seen=""
  for _ in $(seq 300); do
    on_slurm squeue -h -j "$job" -o '%i %T %D' 2>/dev/null | grep -q "^$job RUNNING 2$" && { seen=1; break; }
    [ "$(state_of "$job")" = COMPLETED ] && break
    sleep 0.1
  done
  [ -n "$seen" ] || fail "squeue never showed job $job running on 2 nodes"
  st=$(wait_job "$job" 120)
  [ "$st" = COMPLETED ] || { cat "$work/slurm-$job.out"; fail "job $job ($launch): $st"; }
  [ "$(heads "$work/$launch")" = "$ref" ] || fail "the witness chain of the $launch job differs"
  "$wit" inspect "$work/$launch" | grep -q "world size: 2" || fail "$launch job: not 2 processes"
  echo "sbatch with $launch: job $job ran on 2 nodes (squeue showed it), same chain as one process"
done

# scancel mid-run, then --resume under a new sbatch on one node.
long=(--set data.dir="$work/data" --set train.steps=16 --set train.checkpoint_every=4
      --set train.eval_every=0 --set witness.fingerprint_every=4 --set train.threads=1)
job=$(submit --nodes=2 --ntasks-per-node=1 launch/slurm.sbatch "$cfg" "${long[@]}" \
  --out "$work/cancel" -q) || fail "sbatch (long run)"
for _ in $(seq 600); do
  s=$(steps_of "$work/cancel")
  [ -n "$s" ] && [ "$s" -ge 6 ] && break
  sleep 0.1
done
on_slurm scancel "$job" || fail scancel
st=$(wait_job "$job" 60)
[ "$st" = CANCELLED ] || fail "job $job after scancel: $st"
done_steps=$(steps_of "$work/cancel")
"$wit" inspect "$work/cancel" >/dev/null || fail "the log of the cancelled job does not verify"
[ "$done_steps" -lt 16 ] || fail "the job finished before it was cancelled"
job=$(submit --nodes=1 --ntasks=1 launch/slurm.sbatch --resume "$work/cancel" -q) ||
  fail "sbatch --resume"
st=$(wait_job "$job" 120)
[ "$st" = COMPLETED ] || { cat "$work/slurm-$job.out"; fail "resume job $job: $st"; }
"$wit" train "$cfg" "${long[@]}" --out "$work/straight" -q >/dev/null || fail "uninterrupted run"
[ "$(heads "$work/cancel")" = "$(heads "$work/straight")" ] || fail "the resumed chain differs"
echo "scancel after step $done_steps of 16: log valid; resumed on 1 node by a new sbatch, same chain"
echo "slurm: all passed"
