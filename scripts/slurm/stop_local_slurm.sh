#!/usr/bin/env bash
# Stops the one-node Slurm that start_local_slurm.sh started in DIR: cancels its jobs, shuts
# down slurmctld and slurmd, then munged. Safe to run when nothing (or only part) is running.
# The folder and its logs stay. Usage: stop_local_slurm.sh DIR
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
source "$(dirname "$0")/local_slurm_lib.sh"
local_slurm_paths "$1"
[ -d "$DIR" ] || { say "nothing to stop: $DIR does not exist"; exit 0; }
export SLURM_CONF="$CONF"

if [ -n "$(pid_of "$CTLD_PID" slurmctld)" ]; then
  # Jobs first, so no job step outlives its slurmd.
  jobs=$(squeue -h -o %i 2>/dev/null)
  if [ -n "$jobs" ]; then
    say "cancelling jobs: $(echo $jobs)"
    scancel $jobs 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  scontrol shutdown >/dev/null 2>&1 || say "scontrol shutdown failed; stopping the daemons by pid"
fi
stop_pid "$CTLD_PID" slurmctld 15
stop_pid "$SLURMD_PID" slurmd 15
if [ -n "$(pid_of "$MUNGE_PID" munged)" ]; then
  munged -s -S "$MUNGE_SOCKET" >/dev/null 2>&1 || true
fi
stop_pid "$MUNGE_PID" munged 5
rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
say "stopped the Slurm in $DIR"
