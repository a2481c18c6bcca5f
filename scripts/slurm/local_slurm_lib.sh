# Shared by start_local_slurm.sh and stop_local_slurm.sh: where the files of a local Slurm in
# scratch folder $DIR live, and how to tell whether its daemons are running.
say() { echo "[slurm] $*" >&2; }

# local_slurm_paths DIR: sets the paths of that instance (DIR made absolute).
local_slurm_paths() {
  DIR=$(realpath -m "$1")
  CONF="$DIR/slurm.conf"
  MUNGE_DIR="$DIR/munge"
  MUNGE_SOCKET="$MUNGE_DIR/munge.socket"
  MUNGE_PID="$DIR/run/munged.pid"
  CTLD_PID="$DIR/run/slurmctld.pid"
  SLURMD_PID="$DIR/run/slurmd.pid"
}

# running PID: the process exists and is not a zombie (a container's init may never reap it).
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != "Z" ]
}

# pid_of PIDFILE COMMAND: the pid in PIDFILE when that process is alive and is COMMAND
# (a stale file, or a pid reused by another program, prints nothing).
pid_of() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$2" ] && running "$pid" && echo "$pid"
  return 0
}

# stop_pid PIDFILE COMMAND SECONDS: waits up to SECONDS for the process to end, then sends
# TERM, then KILL; removes the pid file.
stop_pid() {
  local pid i
  pid=$(pid_of "$1" "$2")
  for ((i = 0; i < $3 * 10; i++)); do
    [ -n "$pid" ] && running "$pid" || break
    sleep 0.1
  done
  if [ -n "$pid" ] && running "$pid"; then
    say "$2 (pid $pid) still running: sending TERM"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do running "$pid" || break; sleep 0.1; done
    running "$pid" && { say "$2 (pid $pid): sending KILL"; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$1"
}
