# Sourced by the Slurm tests after netns_hosts.sh: a real Slurm cluster on this machine. munged
# (its own key and socket), slurmctld on host 1, and one slurmd per "host", each in its network
# namespace and a UTS namespace whose hostname is its node name (h1, h2, ...), so every slurmd
# finds itself in slurm.conf as on real machines. Everything lives under DIR; nothing touches
# /etc. Needs root, slurm-wlm and munge.
#   slurm_up DIR N CPUS   start the cluster: nodes h1..hN with CPUS CPUs each; waits until idle
#   slurm_down            stop the daemons started here
#   on_slurm CMD...       run CMD as a user on host 1 (SLURM_CONF set)
slurm_pids=()
slurm_up() {  # DIR N CPUS
  local dir=$1 n=$2 cpus=$3 i
  slurm_dir=$dir
  mkdir -p "$dir/munge" "$dir/state" "$dir/log"
  chmod 711 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed" || return 1
  slurm_pids+=("$(cat "$dir/munge/munged.pid")")
  # Ports of our own, so that a Slurm of the machine (if any) is not disturbed.
  local port=$(( 17000 + $$ % 1000 * 2 ))
  {
    echo "ClusterName=wit"
    echo "SlurmctldHost=h1($hosts_subnet.11)"
    echo "SlurmctldPort=$port"
    echo "SlurmdPort=$((port + 1))"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/socket"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool-%n"
    echo "TmpFS=$dir/tmp-%n"  # each node's own /tmp (PMIx puts its per-step files there)
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "SchedulerType=sched/backfill"
    echo "SlurmdParameters=config_overrides"
    for i in $(seq 1 "$n"); do
      echo "NodeName=h$i NodeAddr=$hosts_subnet.$((10 + i)) CPUs=$cpus State=UNKNOWN"
    done
    echo "PartitionName=wit Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$dir/slurm.conf"
  printf "CgroupPlugin=cgroup/v1\n" >"$dir/cgroup.conf"
  for i in $(seq 1 "$n"); do mkdir -p "$dir/spool-h$i" "$dir/tmp-h$i"; done
  export SLURM_CONF="$dir/slurm.conf"
  on_host 1 unshare --uts sh -c "hostname h1; exec slurmctld -i" || return 1
  for i in $(seq 1 "$n"); do
    on_host "$i" unshare --uts sh -c "hostname h$i; exec slurmd" || return 1
  done
  for _ in $(seq 150); do
    [ "$(on_host 1 sinfo -h -t idle -o %D 2>/dev/null)" = "$n" ] && return 0
    sleep 0.2
  done
  echo "slurm_up: the nodes did not become idle:"
  on_host 1 sinfo 2>&1
  tail -5 "$dir"/log/*.log
  return 1
}
slurm_down() {
  local f
  for f in "$slurm_dir"/slurmd-*.pid "$slurm_dir"/slurmctld.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 1
  for f in "$slurm_dir"/slurmd-*.pid "$slurm_dir"/slurmctld.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  for f in "${slurm_pids[@]}"; do kill "$f" 2>/dev/null; done
}
on_slurm() {
  on_host 1 "$@"
}
