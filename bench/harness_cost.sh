#!/usr/bin/env bash
# What the harness costs a training run, measured inside one run rather than as the difference of
# two (bench/harness_overhead.sh, whose runs vary by more than the 1% target): dense ResNet-20
# (bench/resnet20_step.yaml, 2 ranks x 1 thread, step and evaluation rows written as always),
# rank 0 sampled by `perf record -e cpu-clock` in one run and its file-system calls counted by
# `strace -c` in another. Rank 0 writes the rows; the other ranks wait for it at the next
# collective, so its cost is the run's.
# Prints, as shares of rank 0's CPU samples, SQLite's and Cedar's store, metering and progress
# code, and the seconds of rank 0's write, pwrite64, fcntl, fsync and fdatasync calls (the store's
# I/O and locks, and any log output) against the run's training wall time.
# Usage: bench/harness_cost.sh [OUT_DIR]   (build/cedar must be built; perf and strace installed;
# STEPS=300: about 2 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-results/bench}"
STEPS="${STEPS:-300}"
for tool in perf strace sqlite3; do
  command -v "$tool" >/dev/null || { echo "harness_cost: needs $tool" >&2; exit 2; }
done
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/cedar-harness-cost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
DB="$WORK/cost.db"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# run NAME WRAPPER...: one run whose rank 0 runs under WRAPPER (the other ranks as they are).
run() {
  local name="$1"
  shift
  cat > "$WORK/rank0.sh" <<EOF
#!/usr/bin/env bash
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then exec $* "\$@"; else exec "\$@"; fi
EOF
  chmod +x "$WORK/rank0.sh"
  mpirun -np 2 --oversubscribe --bind-to none "$WORK/rank0.sh" build/cedar run \
    bench/resnet20_step.yaml --db "$DB" --quiet --set name="$name" --set train.max_steps="$STEPS" \
    --set train.epochs="$(((STEPS + 31) / 32))" --set train.checkpoint=false > /dev/null
}
run sampled perf record -q -e cpu-clock -F 1000 -o "$WORK/perf.data"
run traced strace -f -c -e trace=write,pwrite64,fcntl,fsync,fdatasync -o "$WORK/strace.txt"

wall() { sqlite3 "$DB" "SELECT wall_seconds FROM runs WHERE name='$1' AND status='completed'"; }
rows=$(sqlite3 "$DB" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name='traced'")
# Self time per shared object, and per symbol of the cedar binary.
perf report -i "$WORK/perf.data" --no-children --sort dso 2>/dev/null > "$WORK/dso.txt"
perf report -i "$WORK/perf.data" --no-children --sort sym --dsos cedar 2>/dev/null > "$WORK/sym.txt"
sqlite_share=$(awk '$2 ~ /^libsqlite3/ {gsub("%", "", $1); s += $1} END {printf "%.3f", s}' "$WORK/dso.txt")
store_share=$(awk '$1 ~ /%$/ && /ResultStore|Statement|record_step|add_eval|Metered|meter|progress|log_/ {
  gsub("%", "", $1); s += $1} END {printf "%.3f", s}' "$WORK/sym.txt")
io_seconds=$(awk '$NF == "total" {print $2}' "$WORK/strace.txt")
fsyncs=$(awk '$NF == "fsync" || $NF == "fdatasync" {n += $4} END {print n + 0}' "$WORK/strace.txt")
traced_wall=$(wall traced)
{
  echo "| dense ResNet-20, $STEPS steps, 2 ranks x 1 thread, rows written | measured | share |"
  echo "|---|---:|---:|"
  echo "| rank 0 CPU samples in SQLite | | ${sqlite_share}% |"
  echo "| rank 0 CPU samples in Cedar's store, metering and progress code | | ${store_share}% |"
  echo "| rank 0 write/pwrite64/fcntl/fsync/fdatasync calls ($fsyncs syncs; $rows step rows) | ${io_seconds} s of $(printf '%.2f' "$traced_wall") s | $(awk -v a="$io_seconds" -v b="$traced_wall" 'BEGIN {printf "%.3f%%", 100 * a / b}') |"
  echo
  echo "training wall time: $(printf '%.2f' "$(wall sampled)") s sampled, $(printf '%.2f' "$traced_wall") s traced (target: harness <= 1%)"
} | tee "$OUT/harness_cost.md"
