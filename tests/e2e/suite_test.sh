#!/usr/bin/env bash
# End to end: `cedar suite experiments/quick.yaml` on a small Fashion-MNIST subset runs every
# registered algorithm on 2 MPI ranks; each learns (accuracy well above the 10% of chance); the
# bytes follow the algorithms' formulas; a second invocation skips every completed run; reports
# render in every format; plots render through gnuplot.
# Usage: suite_test.sh CEDAR_BINARY SOURCE_DIR
source "$(dirname "$0")/lib.sh"
CEDAR="$1"; SRC="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-suite.XXXXXX)
DB="$WORK/suite.db"
trap 'rm -rf "$WORK"' EXIT
SMALL=(--set data.train_limit=8192 --set data.test_limit=1000 --set train.batch_size=32
       --set train.threads=1)

out=$("$CEDAR" suite "$SRC/experiments/quick.yaml" --db "$DB" --quiet "${SMALL[@]}" 2>&1)
rc=$?
echo "$out" | tail -20
check "suite exits 0" equals "$rc" 0
n_alg=$("$CEDAR" list | sed -n '/^algorithms/,/^experiment/p' | grep -cE '^  [a-z]')
check "one completed run per registered algorithm" equals "$(q "SELECT COUNT(*) FROM runs WHERE status='completed'")" "$n_alg"
check "every run on 2 ranks" equals "$(q "SELECT DISTINCT world_size FROM runs")" 2
check "every algorithm learns (final accuracy > 25%, chance is 10%)" equals "$(q "SELECT COUNT(*) FROM runs WHERE final_test_accuracy <= 0.25")" 0
low=$(q "SELECT name||':'||final_test_accuracy FROM runs WHERE final_test_accuracy <= 0.25")
[ -n "$low" ] && echo "       below 25%: $low"
dense=$(q "SELECT SUM(payload_bytes) FROM steps JOIN runs ON runs.id = run_id WHERE runs.name='dense'")
fp16=$(q "SELECT SUM(payload_bytes) FROM steps JOIN runs ON runs.id = run_id WHERE runs.name='fp16'")
check "fp16 sends exactly half of dense" equals "$((2 * fp16))" "$dense"
check "every compressor sends less than dense" equals "$(q "SELECT COUNT(*) FROM runs WHERE name NOT IN ('dense', 'lag') AND total_payload_bytes >= (SELECT total_payload_bytes FROM runs WHERE name='dense')")" 0
check "lag logs its uploads every step" equals "$(q "SELECT COUNT(*) = (SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name='lag') FROM step_stats t JOIN runs r ON r.id = t.run_id WHERE r.name='lag' AND key='uploads'")" 1
check "comparison table printed" contains "$out" "| powersgd | powersgd | lenet5 | fashion-mnist | 2 |"
check "claims verdicts printed" contains "$out" "| fp16 halves the data |"
check "fp16 claim reproduced (exactly 2x)" contains "$(echo "$out" | grep '| fp16 halves the data |')" "| 2 | reproduced |"

out=$("$CEDAR" suite "$SRC/experiments/quick.yaml" --db "$DB" --quiet "${SMALL[@]}" 2>&1)
check "second invocation skips every completed run" equals "$(echo "$out" | grep -c 'completed earlier, skipped')" "$n_alg"
check "no run added" equals "$(q "SELECT COUNT(*) FROM runs")" "$n_alg"

csv=$("$CEDAR" report "$DB" --suite quick --format csv)
check "csv report: header plus one line per run" equals "$(echo "$csv" | wc -l)" $((n_alg + 1))
# Modeled time on 1 GbE = compute + sum(latency terms) * 50 us + sum(bus bytes) * 8 ns.
want=$(q "SELECT SUM(compute_seconds) + SUM(latency_steps) * 50e-6 + SUM(bus_bytes) * 8e-9 FROM steps JOIN runs ON runs.id = run_id WHERE runs.name='dense'")
col=$(echo "$csv" | head -1 | tr ',' '\n' | grep -n '^modeled_seconds_1gbe$' | cut -d: -f1)
got=$(echo "$csv" | grep '^dense,' | cut -d, -f"$col")
check "modeled 1 GbE time = compute + alpha-beta cost" awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(d < 0.002 && d > -0.002) }'
check "dense is slower on 1 GbE than on 100 GbE" greater "$got" "$(echo "$csv" | grep '^dense,' | cut -d, -f$((col + 3)))"
md=$("$CEDAR" report "$DB" --suite quick --target 0.5)
check "time-to-target column" contains "$md" "time to 50% s (speed-up)"
first=$(q "SELECT MIN(e.wall_seconds) FROM evals e JOIN runs r ON r.id = e.run_id WHERE r.name='dense' AND e.test_accuracy >= 0.5")
check "dense time to 50% is its first evaluation at 50%" contains "$(echo "$md" | grep '^| dense |')" "| $(printf '%.1f' "$first") (1.00×) |"
check "latex report is a tabular" contains "$("$CEDAR" report "$DB" --format tex)" "\\begin{tabular}"
"$CEDAR" report "$DB" --suite quick --plots "$WORK/plots" > /dev/null 2>&1
check "four gnuplot scripts" equals "$(ls "$WORK/plots"/*.gp | wc -l)" 4
check "every script rendered to non-empty SVG and PNG" equals "$(find "$WORK/plots" -maxdepth 1 \( -name '*.svg' -o -name '*.png' \) -size +1k | wc -l)" 8
# quick.yaml evaluates once per epoch (2 epochs): a header and two rows per curve.
check "accuracy data: one row per evaluation" equals "$(wc -l < "$WORK/plots/data/dense.tsv")" 3
check "one accuracy curve per algorithm" equals "$(grep -o 'with linespoints' "$WORK/plots/accuracy_vs_bytes.gp" | wc -l)" "$n_alg"
cp -r "$WORK/plots" "$WORK/plots-first"
"$CEDAR" report "$DB" --suite quick --plots "$WORK/plots" > /dev/null 2>&1
check "plot data and scripts are deterministic" diff -r -x '*.svg' -x '*.png' "$WORK/plots-first" "$WORK/plots"
out=$("$CEDAR" report "$WORK/missing.db" 2>&1); rc=$?
check "report on a missing database fails clearly" contains "$out" "$WORK/missing.db"
finish
