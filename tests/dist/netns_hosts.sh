# Sourced by the multi-host tests: "hosts" made on this machine as Linux network namespaces, each
# with an eth0 on a private /24 joined by a bridge that lives in a namespace of its own, and a
# host name of its own (h1, h2, ...: a UTS namespace per process started there), so no
# traffic leaves the namespaces the fixture creates and removes (needs root). Open MPI reaches
# them over TCP with a launcher agent that enters the namespace instead of ssh.
#   hosts_up N           create hosts 1..N (addresses $hosts_subnet.11, .12, ...)
#   hosts_down           remove every namespace this shell created
#   hosts_agent FILE     write the launcher agent (`agent HOST COMMAND...`)
#   hosts_bind I FROM TO FILE  host I sees file FROM at path TO (agent FILE)
#   hosts_unplug I       take host I's port on the switch down (it stays up, unreachable)
#   hosts_mpi_env FILE   export Open MPI's settings: that agent, the tcp BTL, the subnet pinned
#   hosts_file N FILE    a hostfile of hosts 1..N, one slot each
#   on_host I CMD...     run CMD in host I (mpirun is started from host 1)
#   hosts_need_root      succeeds where namespaces can be made (root), else says why
#   rank_pid PATTERN R   the pid of MPI rank R among the processes matching PATTERN
hosts_prefix="wit$$"
hosts_subnet="10.213.$(( $$ % 200 + 20 ))"
hosts_up() {
  local n=$1 i
  ip netns add "${hosts_prefix}sw"
  ip -n "${hosts_prefix}sw" link add br0 type bridge
  ip -n "${hosts_prefix}sw" link set br0 up
  for i in $(seq 1 "$n"); do
    ip netns add "${hosts_prefix}h$i"
    ip link add "${hosts_prefix}a$i" type veth peer name "${hosts_prefix}b$i"
    ip link set "${hosts_prefix}a$i" netns "${hosts_prefix}h$i"
    ip link set "${hosts_prefix}b$i" netns "${hosts_prefix}sw"
    ip -n "${hosts_prefix}h$i" link set "${hosts_prefix}a$i" name eth0
    ip -n "${hosts_prefix}h$i" addr add "$hosts_subnet.$((10 + i))/24" dev eth0
    ip -n "${hosts_prefix}h$i" link set eth0 up
    ip -n "${hosts_prefix}h$i" link set lo up
    ip -n "${hosts_prefix}sw" link set "${hosts_prefix}b$i" master br0
    ip -n "${hosts_prefix}sw" link set "${hosts_prefix}b$i" up
  done
}
hosts_down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^${hosts_prefix}"); do ip netns del "$ns"; done
}
# The launcher agent Open MPI runs instead of ssh: `agent HOST COMMAND...` runs COMMAND in the
# namespace whose address is HOST, under that host's name and with its own mounts (hosts_bind).
hosts_agent() {
  local agent=$1
  cat >"$agent" <<'AGENT'
#!/bin/sh
host=$1
shift
i=$(( ${host##*.} - 10 ))
binds="$0.binds.h$i"
[ -e "$binds" ] || binds=/dev/null
exec ip netns exec "PREFIXh$i" unshare --uts --mount sh -c '
  hostname "h$1" || exit 1
  while read -r from to; do mount --bind "$from" "$to" || exit 1; done <"$2"
  shift 2
  exec sh -c "$*"' agent "$i" "$binds" "$@"
AGENT
  sed -i "s/PREFIX/${hosts_prefix}/" "$agent"
  chmod +x "$agent"
}
# Host I sees the file FROM at path TO (a bind mount in the processes the agent starts there):
# a host whose copy of a shared file differs.
hosts_bind() {  # I FROM TO AGENT
  echo "$2 $3" >>"$4.binds.h$1"
}
hosts_unplug() {  # I
  ip -n "${hosts_prefix}sw" link set "${hosts_prefix}b$1" down
}
hosts_mpi_env() {  # AGENT
  export OMPI_MCA_plm_rsh_agent=$1
  export OMPI_MCA_btl=tcp,self
  export OMPI_MCA_btl_tcp_if_include="$hosts_subnet.0/24"
  export OMPI_MCA_oob_tcp_if_include="$hosts_subnet.0/24"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
on_host() {  # I COMMAND...
  local i=$1
  shift
  ip netns exec "${hosts_prefix}h$i" unshare --uts sh -c 'hostname "$0" && exec "$@"' "h$i" "$@"
}
hosts_file() {  # N FILE
  local i
  : >"$2"
  for i in $(seq 1 "$1"); do echo "$hosts_subnet.$((10 + i)) slots=1" >>"$2"; done
}
hosts_need_root() {
  if [ "$(id -u)" -ne 0 ] || ! ip netns add "wit-probe-$$" 2>/dev/null; then
    echo "SKIP: needs root to create network namespaces"
    return 1
  fi
  ip netns del "wit-probe-$$"
}
rank_pid() {  # PATTERN RANK
  local pid
  for pid in $(pgrep -f "$1"); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$pid"
  done
}
