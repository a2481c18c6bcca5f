#!/usr/bin/env bash
# Starts a one-node Slurm cluster (munged, slurmctld, slurmd) with every file in scratch folder
# DIR, as root and without systemd, waits until the node is idle, and prints the line that
# points Slurm's commands at it:
#   eval "$(scripts/slurm/start_local_slurm.sh /tmp/slurm)"   # export SLURM_CONF=/tmp/slurm/slurm.conf
#   sbatch ... ; srun ... ; sinfo
#   scripts/slurm/stop_local_slurm.sh /tmp/slurm
# A second start while it runs only prints the line again; a start after a stop (or after a
# crash, with stale pid files) starts it afresh, with an empty queue. The node's CPUs and memory
# come from `slurmd -C`; the ports are the first free ones from 6817 (or SLURMCTLD_PORT /
# SLURMD_PORT).
# Exit status: 0 running, 1 failed to start (logs printed), 3 cannot run here (Slurm or munge
# not installed, or not root).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/local_slurm_lib.sh"
local_slurm_paths "$1"

for cmd in munged mungekey munge unmunge slurmctld slurmd sinfo scontrol sbatch srun squeue; do
  command -v "$cmd" >/dev/null || {
    say "cannot start a local Slurm: '$cmd' not found (Debian: apt-get install slurm-wlm munge)"
    exit 3
  }
done
[ "$(id -u)" -eq 0 ] || { say "cannot start a local Slurm: the daemons run as root (SlurmUser=root)"; exit 3; }

export SLURM_CONF="$CONF"
print_export() {
  echo "export SLURM_CONF=$CONF" > "$DIR/slurm.env"
  echo "export SLURM_CONF=$CONF"
}
node_state() { timeout 10 sinfo -h -o %T 2>/dev/null | head -1; }

if [ -n "$(pid_of "$MUNGE_PID" munged)" ] && [ -n "$(pid_of "$CTLD_PID" slurmctld)" ] &&
   [ -n "$(pid_of "$SLURMD_PID" slurmd)" ] && [ -n "$(node_state)" ]; then
  say "already running in $DIR (node $(node_state))"
  print_export
  exit 0
fi
# Whatever is left of an earlier start (some daemons, stale pid files) goes first.
if [ -f "$CONF" ]; then "$HERE/stop_local_slurm.sh" "$DIR" 2>/dev/null || true; fi

HOST=$(hostname -s)
mkdir -p "$DIR/state" "$DIR/spool/$HOST" "$DIR/run" "$DIR/log" "$DIR/tmp" "$MUNGE_DIR"
# munged wants its socket folder searchable by all and writable only by its owner.
chmod 755 "$DIR" "$DIR/run" "$DIR/log" "$MUNGE_DIR"

# munge: our own key, socket and daemon. --force: munged would refuse a socket below a folder
# that others cannot search (e.g. one made by mktemp -d); Slurm's daemons and commands run as root.
if [ ! -s "$MUNGE_DIR/munge.key" ]; then mungekey -c -k "$MUNGE_DIR/munge.key"; fi
chmod 600 "$MUNGE_DIR/munge.key"
rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
munged --force -S "$MUNGE_SOCKET" --key-file="$MUNGE_DIR/munge.key" --log-file="$DIR/log/munged.log" \
  --pid-file="$MUNGE_PID" --seed-file="$MUNGE_DIR/munged.seed" ||
  { say "munged failed to start:"; tail -5 "$DIR/log/munged.log" >&2; exit 1; }
munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET" >/dev/null ||
  { say "munged does not answer on $MUNGE_SOCKET"; exit 1; }

# Ports: the first free ones (TCP listeners) from 6817, unless given.
port_free() { [ -z "$(ss -Htln "sport = :$1" 2>/dev/null)" ]; }
next_free_port() {
  local p=$1
  while ! port_free "$p" || [ "$p" == "${2:-}" ]; do p=$((p + 1)); done
  echo "$p"
}
CTLD_PORT=${SLURMCTLD_PORT:-$(next_free_port 6817)}
SLURMD_PORT=${SLURMD_PORT:-$(next_free_port $((CTLD_PORT + 1)) "$CTLD_PORT")}

NODE_LINE=$(slurmd -C | head -1)
[[ "$NODE_LINE" == NodeName=* ]] || { say "unexpected 'slurmd -C' output: $NODE_LINE"; exit 1; }
sed -e "s|@CLUSTER@|local|g" -e "s|@HOST@|$HOST|g" -e "s|@DIR@|$DIR|g" \
    -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
    -e "s|@NODE_LINE@|$NODE_LINE|g" -e "s|@PARTITION@|local|g" \
    "$HERE/slurm.conf.in" > "$CONF"

show_logs() {
  for f in slurmctld slurmd; do
    say "--- tail of $DIR/log/$f.log"
    tail -15 "$DIR/log/$f.log" >&2 2>/dev/null || true
  done
}
# A fresh controller state (-c): jobs of an instance that crashed would otherwise be recovered
# as running and hold the node for minutes.
slurmctld -c -f "$CONF" || { say "slurmctld failed to start"; show_logs; exit 1; }
slurmd -f "$CONF" || { say "slurmd failed to start"; show_logs; exit 1; }

# The node registers within a second or two; a state left drained by an earlier run is resumed.
resumed=0
for ((i = 0; i < 300; i++)); do
  state=$(node_state)
  [ "$state" == "idle" ] && break
  if [[ "$state" == drain* || "$state" == down ]] && [ $resumed -eq 0 ]; then
    scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    resumed=1
  fi
  sleep 0.1
done
if [ "$state" != "idle" ]; then
  say "the node did not become idle within 30 s (state: '${state:-no answer}')"
  show_logs
  exit 1
fi
say "running in $DIR: node $HOST idle, $(echo "$NODE_LINE" | grep -o 'CPUs=[0-9]*'), ports $CTLD_PORT/$SLURMD_PORT"
print_export
