#!/usr/bin/env bash
# Per run name of a suite: each completed seed's median step seconds (the time between consecutive
# step rows, steps 1 on: step 0's row also holds the set-up of training) and their mean. What
# docs/scheduling_findings.md tabulates; the claims' step_speedup uses the same medians (it also
# leaves out an evaluation that falls between two step rows).
# Usage: scripts/step_medians.sh DB SUITE     (needs sqlite3 and python3)
set -euo pipefail
DB="$1"
SUITE="$2"
sqlite3 "$DB" "SELECT r.name, r.seed, b.wall_seconds - a.wall_seconds FROM steps a
  JOIN steps b ON b.run_id = a.run_id AND b.step = a.step + 1 JOIN runs r ON r.id = a.run_id
  WHERE r.status = 'completed' AND r.suite = '$SUITE' ORDER BY r.name, r.seed, a.step" |
python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in sys.stdin:
    name, seed, seconds = line.strip().split("|")
    runs[name][seed].append(float(seconds))
for name in sorted(runs):
    medians = [statistics.median(v) for v in runs[name].values()]
    print(f"{name:28s} seeds {len(medians)}  median step s per seed: "
          + ", ".join(f"{m:.3f}" for m in medians) + f"  (mean {statistics.mean(medians):.3f})")
'
