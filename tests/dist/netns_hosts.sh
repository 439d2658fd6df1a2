# Sourced by the multi-host tests: "hosts" made on this machine as Linux network namespaces, each
# with an eth0 on a private /24 joined by a bridge that lives in a namespace of its own, so no
# traffic leaves the namespaces the fixture creates and removes (needs root). Open MPI reaches
# them over TCP with a launcher agent that enters the namespace instead of ssh.
#   hosts_up N           create hosts 1..N (addresses $hosts_subnet.11, .12, ...)
#   hosts_down           remove every namespace this shell created
#   hosts_agent FILE     write the launcher agent (`agent HOST COMMAND...`)
#   hosts_mpi_env FILE   export Open MPI's settings: that agent, the tcp BTL, the subnet pinned
#   hosts_file N FILE    a hostfile of hosts 1..N, one slot each
#   on_host I CMD...     run CMD in host I (mpirun is started from host 1)
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
# namespace whose address is HOST.
hosts_agent() {
  local agent=$1
  cat >"$agent" <<AGENT
#!/bin/sh
host=\$1
shift
exec ip netns exec "${hosts_prefix}h\$(( \${host##*.} - 10 ))" sh -c "\$*"
AGENT
  chmod +x "$agent"
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
  ip netns exec "${hosts_prefix}h$i" "$@"
}
hosts_file() {  # N FILE
  local i
  : >"$2"
  for i in $(seq 1 "$1"); do echo "$hosts_subnet.$((10 + i)) slots=1" >>"$2"; done
}
