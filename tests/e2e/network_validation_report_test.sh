#!/usr/bin/env bash
# End to end: `cedar network validate` on two tiny databases of runs "measured on shaped links"
# at 100mbit and 1gbit and the profiles calibrated there (tests/e2e/validation_fixture_writer.cpp
# writes them with known per-step seconds): its tables, the document with its plots' data and
# scripts, its regeneration from the dumps and profile copies beside it alone, and the error for
# a database whose links no profile given was calibrated on. The
# expected numbers are worked out here from the writer's seconds and the α–β formulas. No root.
# Usage: network_validation_report_test.sh CEDAR_BINARY VALIDATION_FIXTURE_WRITER
source "$(dirname "$0")/lib.sh"
CEDAR="$1"
WRITER="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-validation.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$WRITER" "$WORK" || exit 1

printf 'Top-k beats dense below the crossover.\n' > "$WORK/findings.md"
out=$("$CEDAR" network validate "$WORK/100mbit.db" "$WORK/1gbit.db" \
  --profiles "$WORK/vc-100mbit-2x1.yaml" "$WORK/vc-1gbit-2x1.yaml" --warmup 1 \
  --document "$WORK/docs/validation.md" --findings "$WORK/findings.md" --no-render \
  2> "$WORK/stderr")
check "cedar network validate exits 0" equals "$?" 0
# Dense at 100mbit: steps 1-3 measured 0.30, 0.20, 0.25 s (median 0.25) beside 0.10 s of compute;
# modeled 2 α + 1,000,000 β = 2e-4 + 0.2 = 0.2002 s: (0.2002 - 0.25) / 0.25 = -19.9%, share 71%.
check "dense at 100mbit: medians, error and share" contains "$out" \
  "| dense/np2 | 2 | 3 | 0.25 | 0.2 | -19.9% | 0.1 | 71% |"
# Top-k at 100mbit: 0.005 s measured, α + 20,000 β = 1e-4 + 0.004 = 0.0041 s modeled: -18.0%.
check "top-k at 100mbit" contains "$out" "| topk/np2 | 2 | 3 | 0.005 | 0.0041 | -18.0% | 0.15 | 3% |"
# Dense at 1gbit: median 0.03 s measured, 2e-4 + 0.02 = 0.0202 s modeled: -32.7%.
check "dense at 1gbit" contains "$out" "| dense/np2 | 2 | 3 | 0.03 | 0.0202 | -32.7% | 0.1 | 23% |"
check "each table names its profile" contains "$out" \
  "modeled (profile vc-1gbit-2x1): comm s/step"
check "each table says the seconds were measured on shaped links" contains "$out" \
  "Measured on shaped links: 2 hosts x 1 rank, 100mbit full duplex per host (tbf, burst 256kb)"
# Measured crossover: mean steps after warm-up, top-k 0.155 s against dense 0.35 s at 100mbit
# (-0.195 s), 0.151 s against 0.13 s at 1gbit (+0.021 s); linear in 1/rate between them.
measured=$(awk 'BEGIN { x = 1/1e8 + 0.195 * (1/1e9 - 1/1e8) / (0.021 + 0.195);
  printf "%.0f", 1 / x / 1e6 }')
# Predicted from either rate: top-k's extra 0.05 s of compute less one α (1e-4) against the
# 980,000 bytes it saves: 980000 / 0.0499 bytes/s, at 8/(β·rate) = 40% of the rate reached.
model=$(awk 'BEGIN { printf "%.3g", 980000 / 0.0499 * 8 / 1e9 }')
predicted=$(awk 'BEGIN { printf "%.0f", 980000 / 0.0499 * 8 / 0.4 / 1e6 }')
check "the crossover: measured over the rates, predicted from each" contains "$out" \
  "| topk/np2 | below $measured Mbit/s (interpolated between 100mbit and 1gbit) | below $predicted Mbit/s (model $model Gb/s) | below $predicted Mbit/s (model $model Gb/s) |"
check "no run at P = 4: no headline" contains "$out" "No run at P = 4 spent at least half"

doc=$(cat "$WORK/docs/validation.md" 2> /dev/null)
check "the document repeats the tables" contains "$doc" \
  "| dense/np2 | 2 | 3 | 0.25 | 0.2 | -19.9% | 0.1 | 71% |"
check "the document gives the command that wrote it" contains "$doc" \
  "build/cedar network validate $WORK/100mbit.db $WORK/1gbit.db --profiles"
check "the document lists the profiles' fits" contains "$doc" "| vc-100mbit-2x1 | 2 | allreduce | 100.0 | 200.000 | 0.040 |"
check "the document's provenance names the shaped links" contains "$doc" \
  "Seconds measured on shaped links: virtual cluster 2x1, 100mbit full duplex per host (tbf, burst 256kb)"
check "the scatter plot's data and script" test -s "$WORK/docs/validation-plots/data/link_validation_scatter.tsv" -a \
  -s "$WORK/docs/validation-plots/link_validation_scatter.gp"
check "the error bars' data: one row per run" equals \
  "$(grep -vc '^#' "$WORK/docs/validation-plots/data/link_validation_errors.tsv")" 2
check "--no-render draws no image" test ! -e "$WORK/docs/validation-plots/link_validation_scatter.svg"

check "the findings are a section of their own" contains "$doc" \
  "## Findings

Top-k beats dense below the crossover."
check "each database's dump and each profile's copy beside the document" test \
  -s "$WORK/docs/validation-data/100mbit.sql.gz" -a -s "$WORK/docs/validation-data/1gbit.sql.gz" \
  -a -s "$WORK/docs/validation-data/vc-100mbit-2x1.yaml" \
  -a -s "$WORK/docs/validation-data/vc-1gbit-2x1.yaml"

# Regenerated from the data beside the document alone: the databases and profiles it names moved
# away, a byte of the document and of a plot's data file compared.
mkdir "$WORK/moved"
mv "$WORK"/*.db "$WORK"/vc-*.yaml "$WORK/moved/"
"$CEDAR" network validate --regenerate "$WORK/docs/validation.md" --output-dir "$WORK/again" \
  > /dev/null 2> "$WORK/regenerate.log"
check "--regenerate exits 0" equals "$?" 0
check "--regenerate writes the same document" equals \
  "$(cmp "$WORK/docs/validation.md" "$WORK/again/validation.md" 2>&1 && echo same)" same
check "... and the same plot data" equals "$(cmp "$WORK/docs/validation-plots/data/link_validation_scatter.tsv" \
  "$WORK/again/validation-plots/data/link_validation_scatter.tsv" 2>&1 && echo same)" same
# A changed dump shows: top-k's measured seconds at 100mbit doubled in it.
gzip -dc "$WORK/docs/validation-data/100mbit.sql.gz" > "$WORK/dump.sql"
before=$(md5sum < "$WORK/dump.sql")
sed -i -E 's/([(,])0\.005([,)])/\10.01\2/g' "$WORK/dump.sql"
check "the dump holds the seconds it is read from" differs "$(md5sum < "$WORK/dump.sql")" "$before"
gzip -9nc "$WORK/dump.sql" > "$WORK/docs/validation-data/100mbit.sql.gz"
"$CEDAR" network validate --regenerate "$WORK/docs/validation.md" --output-dir "$WORK/changed" \
  > /dev/null 2>&1
check "... and a changed dump changes the document" differs \
  "$(cat "$WORK/changed/validation.md")" "$doc"
rm "$WORK/docs/validation-data/vc-1gbit-2x1.yaml"
err=$("$CEDAR" network validate --regenerate "$WORK/docs/validation.md" --output-dir "$WORK/x" 2>&1)
check "a missing profile copy is an error" equals "$?" 2
check "... naming the copy and the profile file" contains "$err" \
  "no copy $WORK/docs/validation-data/vc-1gbit-2x1.yaml of profile file $WORK/vc-1gbit-2x1.yaml"
mv "$WORK"/moved/* "$WORK/"

err=$("$CEDAR" network validate "$WORK/100mbit.db" --profiles "$WORK/vc-1gbit-2x1.yaml" 2>&1 > /dev/null)
check "a profile of other links is refused" equals "$?" 2
check "the error names the database, the run and its links" contains "$err" \
  "$WORK/100mbit.db: run 'dense/np2' (P = 2) was measured on 2 hosts x 1 rank, 100mbit"
check "the error names the profile file and where it was calibrated" contains "$err" \
  "$WORK/vc-1gbit-2x1.yaml: 'vc-1gbit-2x1', measured on virtual cluster: 2 hosts x 1 rank, 1gbit"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
