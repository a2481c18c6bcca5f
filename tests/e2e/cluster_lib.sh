# Helpers of the virtual-cluster tests: skip (status 77, the reason printed) where the machine
# cannot host one, and what this machine's root namespace holds of links and qdiscs.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

skip() { echo "SKIP: $*"; exit 77; }

# Skips unless root with ip, tc and mpirun, and unless no virtual cluster is in use here (the
# tests would replace it). Then probes namespaces and tbf with a one-host cluster.
need_cluster() {  # need_cluster CEDAR
  [ "$(id -u)" = 0 ] || skip "not root: network namespaces and qdiscs need CAP_NET_ADMIN"
  local tool
  for tool in ip tc mpirun; do command -v "$tool" > /dev/null || skip "no $tool on PATH"; done
  "$1" cluster status > /dev/null 2>&1 && skip "a virtual cluster is up here (cedar cluster status); not replacing it"
  local out rc
  out=$("$1" cluster up --hosts 1 2>&1); rc=$?
  [ "$rc" = 4 ] && skip "$out"
  [ "$rc" = 0 ] || { echo "$out"; echo "FAIL - the probing cluster did not come up"; exit 1; }
  "$1" cluster down > /dev/null
}

# What the root namespace holds: namespaces, links (names) and qdiscs, one per line.
machine_net() {
  ip netns list | cut -d' ' -f1 | sort
  ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort
  tc qdisc show | sed 's/ refcnt [0-9]*//' | sort
}
