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
# 500 test images: each of a run's eight evaluations costs what training on about 200 images does;
# the accuracies are scored on the first 500 images of the test set (random-k, the lowest, at 40%).
SMALL=(--set data.train_limit=8192 --set data.test_limit=500 --set train.batch_size=32
       --set train.threads=1)

out=$("$CEDAR" suite "$SRC/experiments/quick.yaml" --db "$DB" --quiet "${SMALL[@]}" 2>&1)
rc=$?
echo "$out" | tail -20
check "suite exits 0" equals "$rc" 0
# Every registered algorithm but the parameter server (ps), whose suite is parameter_server.yaml,
# and script, which runs a researcher's module (e2e_script).
n_alg=$("$CEDAR" list | sed -n '/^algorithms/,/^experiment/p' | grep -E '^  [a-z]' | grep -Ecv '^  (ps|script) ')
check "one completed run per registered algorithm" equals "$(q "SELECT COUNT(*) FROM runs WHERE status='completed'")" "$n_alg"
check "every run on 2 ranks" equals "$(q "SELECT DISTINCT world_size FROM runs")" 2
check "every algorithm learns (final accuracy > 25%, chance is 10%)" equals "$(q "SELECT COUNT(*) FROM runs WHERE final_test_accuracy <= 0.25")" 0
low=$(q "SELECT name||':'||final_test_accuracy FROM runs WHERE final_test_accuracy <= 0.25")
[ -n "$low" ] && echo "       below 25%: $low"
dense=$(q "SELECT SUM(payload_bytes) FROM steps JOIN runs ON runs.id = run_id WHERE runs.name='dense'")
fp16=$(q "SELECT SUM(payload_bytes) FROM steps JOIN runs ON runs.id = run_id WHERE runs.name='fp16'")
check "fp16 sends exactly half of dense" equals "$((2 * fp16))" "$dense"
# D-PSGD sends its whole model to its neighbour: on a ring of 2 as many bytes as dense.
check "every compressor sends less than dense" equals "$(q "SELECT COUNT(*) FROM runs WHERE name NOT IN ('dense', 'lag', 'dpsgd') AND total_payload_bytes >= (SELECT total_payload_bytes FROM runs WHERE name='dense')")" 0
check "lag logs its uploads every step" equals "$(q "SELECT COUNT(*) = (SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name='lag') FROM step_stats t JOIN runs r ON r.id = t.run_id WHERE r.name='lag' AND key='uploads'")" 1
check "comparison table printed" contains "$out" "| powersgd | powersgd | lenet5 | fashion-mnist | 2 |"
check "claims verdicts printed" contains "$out" "| fp16 halves the data |"
check "fp16's bytes hold (exactly 2x, one seed): an accounting check" contains "$(echo "$out" | grep '| fp16 halves the data |')" "| 2 | 1 | holds |"
check "DGC's steady-state claim is measured after its warm-up epoch" contains \
  "$(echo "$out" | grep '| DGC sends 0.1% of each weight tensor')" "| payload_compression, epochs ≥ 1 (counted from 0) |"
check "... a finding (DGC's bytes follow its gradients) that one seed cannot test" contains "$(echo "$out" | grep '| DGC sends 0.1% of each weight tensor')" "| insufficient seeds, reduced scale |"
check "PowerSGD on LeNet-5: 61,706 / 2,266 values" contains "$(echo "$out" | grep '| PowerSGD rank 2 sends')" "| 27.23 |"
check "a one-seed accuracy verdict is no verdict" contains "$(echo "$out" | grep '| DGC: no loss of accuracy |')" "| insufficient seeds, reduced scale |"

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
rate=$(echo "$csv" | head -1 | tr ',' '\n' | grep -nx 'train_img_per_s_per_rank' | cut -d: -f1)
check "every run has a training throughput per rank" equals "$(echo "$csv" | tail -n +2 | cut -d, -f"$rate" | awk '$1 > 0' | wc -l)" "$n_alg"
check "dense is slower on 1 GbE than on 100 GbE" greater "$got" "$(echo "$csv" | grep '^dense,' | cut -d, -f$((col + 3)))"
md=$("$CEDAR" report "$DB" --suite quick --target 0.5)
check "time-to-target column" contains "$md" "time to 50% s (speed-up)"
first=$(q "SELECT MIN(e.wall_seconds) FROM evals e JOIN runs r ON r.id = e.run_id WHERE r.name='dense' AND e.test_accuracy >= 0.5")
check "dense time to 50% is its first evaluation at 50%" contains "$(echo "$md" | grep '^| dense |')" "| $(printf '%.1f' "$first") (1.00×) |"
printf 'networks:\n  - {name: wan, alpha: 1.0e-3, bandwidth_gbps: 0.1}\n' > "$WORK/nets.yaml"
xo=$("$CEDAR" report "$DB" --suite quick --crossover --networks "$WORK/nets.yaml" --plots "$WORK/xplots" 2>&1)
# Its messages on stderr come between whole lines of the tables, wherever the 4 KiB boundaries of
# the output fall (a pipe buffers stdout in blocks).
check "crossover: stderr messages start their own lines" equals "$(echo "$xo" | grep -c '.cedar report: ')" 0
check "crossover: each run against dense at its workers and more" contains "$xo" "| topk | 16 | "
check "crossover: the YAML profile is among the profiles" contains "$xo" "wan (α 1000 µs, 0.1 Gb/s, nominal (assumed))"
check "crossover: plot rendered" equals "$(find "$WORK/xplots" -maxdepth 1 -name 'crossover.*' -size +1k | wc -l)" 3
printf 'The findings, written by hand.\n' > "$WORK/findings.md"
"$CEDAR" report "$DB" --suite quick --claims "$SRC/experiments/quick.yaml" --document "$WORK/doc/quick.md" \
  --findings "$WORK/findings.md" > /dev/null 2>&1
doc=$(cat "$WORK/doc/quick.md" 2>/dev/null)
for section in "## Setting" "## Commands" "## Wall-clock" "## Comparison" "## Claims" "## Findings" \
               "## When does compression help?" "## Plots" "## Provenance"; do
  check "document: $section" contains "$doc" "$section"
done
# The database is outside the repository: the commands name results/<document>.db instead.
check "document: the command that makes the runs" contains "$doc" "build/cedar suite $SRC/experiments/quick.yaml --db results/quick.db"
check "document: the findings included" contains "$doc" "The findings, written by hand."
check "document: every image it shows exists" equals \
  "$(grep -o '(quick-plots/[a-z_]*\.svg)' "$WORK/doc/quick.md" | tr -d '()' | while read -r f; do [ -s "$WORK/doc/$f" ] && echo ok; done | wc -l)" 6
check "latex report is a tabular" contains "$("$CEDAR" report "$DB" --format tex)" "\\begin{tabular}"
"$CEDAR" report "$DB" --suite quick --plots "$WORK/plots" > /dev/null 2>&1
check "five gnuplot scripts" equals "$(ls "$WORK/plots"/*.gp | wc -l)" 5
check "every script rendered to non-empty SVG and PNG" equals "$(find "$WORK/plots" -maxdepth 1 \( -name '*.svg' -o -name '*.png' \) -size +1k | wc -l)" 10
check "the bytes axes say which bytes" contains "$(cat "$WORK/plots/accuracy_vs_bytes.gp" "$WORK/plots/accuracy_vs_wire_bytes.gp")" "payload MB sent by rank 0"
check "... payload and wire" contains "$(cat "$WORK/plots/accuracy_vs_wire_bytes.gp")" "wire (bus) MB pushed by rank 0"
check "titles and labels are drawn as written (an underscore is no subscript)" equals \
  "$(grep -c '^set terminal .* noenhanced$' "$WORK/plots/accuracy_vs_time.gp")" 2
# quick.yaml evaluates 4 times per epoch (2 epochs): a header and eight rows per curve.
check "accuracy data: one row per evaluation" equals "$(wc -l < "$WORK/plots/data/dense.tsv")" 9
check "one accuracy curve per algorithm" equals "$(grep -o 'with linespoints' "$WORK/plots/accuracy_vs_bytes.gp" | wc -l)" "$n_alg"
cp -r "$WORK/plots" "$WORK/plots-first"
"$CEDAR" report "$DB" --suite quick --plots "$WORK/plots" > /dev/null 2>&1
check "plot data and scripts are deterministic" diff -r -x '*.svg' -x '*.png' "$WORK/plots-first" "$WORK/plots"

# Payload compression and wire ratio at P = 4 (reports/comparison.h), against an oracle from
# LeNet-5's parameter shapes (N = 61,706 in 10 tensors): fp16 halves the payload but, allgathered,
# moves exactly dense's bus bytes; signSGD's one bit per element, each tensor packed into whole
# bytes (S bytes), is 4N/S in payload and, allgathered, 2N/S on the wire:
#   dense bus = 2(P-1)/P * 4N = 6N;  signSGD bus = (P-1)/P * P * S = 3S.
cat > "$WORK/p4.yaml" <<YAML
name: p4
suite: p4
model: {name: lenet5}
data: {name: fashion-mnist, train_limit: 512, test_limit: 100}
train: {epochs: 1, batch_size: 16, threads: 1, max_steps: 2, checkpoint: false}
optimizer: {lr: 0.01, schedule: constant}
algorithm: dense
grid:
  world_size: [4]
  algorithm: [dense, fp16, signsgd]
YAML
"$CEDAR" suite "$WORK/p4.yaml" --db "$WORK/p4.db" --quiet > "$WORK/p4.log" 2>&1
check "P = 4 suite exits 0" equals "$?" 0
p4=$("$CEDAR" report "$WORK/p4.db" --suite p4 --format csv)
column() {  # column RUN NAME: the value of column NAME in run RUN's csv line
  local c
  c=$(echo "$p4" | head -1 | tr ',' '\n' | grep -nx "$2" | cut -d: -f1)
  echo "$p4" | grep "^$1," | cut -d, -f"$c"
}
N=0; S=0
for n in 150 6 2400 16 48000 120 10080 84 840 10; do N=$((N + n)); S=$((S + (n + 7) / 8)); done
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.0015) }' || { echo "       expected $2, got $1"; return 1; }; }
check "P=4: LeNet-5 has N = 61706 parameters" equals "$N" 61706
check "P=4: fp16 payload compression 2.000" near "$(column fp16 payload_compression)" 2
check "P=4: fp16 wire ratio 1.000 (an allgather of half-size payloads)" near "$(column fp16 wire_ratio)" 1
check "P=4: signSGD payload compression 4N/S" near "$(column signsgd payload_compression)" "$(awk -v n=$N -v s=$S 'BEGIN { printf "%.4f", 4 * n / s }')"
check "P=4: signSGD wire ratio 2N/S (~16x)" near "$(column signsgd wire_ratio)" "$(awk -v n=$N -v s=$S 'BEGIN { printf "%.4f", 2 * n / s }')"
check "P=4: dense wire ratio 1.000" near "$(column dense wire_ratio)" 1
check "P=4: the markdown table names both ratios" contains "$("$CEDAR" report "$WORK/p4.db" --suite p4)" "| payload compression | wire ratio |"

out=$("$CEDAR" report "$WORK/missing.db" 2>&1); rc=$?
check "report on a missing database fails clearly" contains "$out" "$WORK/missing.db"
finish
