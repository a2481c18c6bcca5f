#!/usr/bin/env bash
# End to end: the claim history of `cedar report --document`. In a scratch git repository a claim
# is committed (A), its bound edited before the runs (B), runs are written recording B, and the
# bound is edited again and committed after them (C). The document names all three commits with
# their dates, says which came after the runs, gives the old and the new bound and the verdict
# under each, and flags the verdicts; an uncommitted edit changes the document; a copy without
# git gets one line instead of the history.
# Usage: claim_history_test.sh CEDAR_BINARY REPORT_FIXTURE_WRITER
source "$(dirname "$0")/lib.sh"
CEDAR="$1"
WRITER="$2"
WORK=$(mktemp -d /tmp/cedar-e2e-claim-history.XXXXXX)
ARCHIVE=$(mktemp -d /tmp/cedar-e2e-claim-archive.XXXXXX)
trap 'rm -rf "$WORK" "$ARCHIVE"' EXIT
cd "$WORK" || exit 1
git init -q . && git config user.email cedar@example.org && git config user.name Cedar
mkdir -p experiments docs results

claims() {  # claims BOUND: the experiment file, its accuracy claim at_least BOUND
  cat > experiments/fixture.yaml <<YAML
# A fixture suite: top-k against dense SGD.
suite: fixture
claims:
  - text: "top-k keeps dense SGD's accuracy"
    source: "a paper, Table 1"
    kind: finding
    run: topk
    metric: accuracy_gap
    at_least: $1
  - text: "top-k sends a hundredth of dense SGD's bytes"
    source: "a paper, Sec. 3"
    kind: accounting
    run: topk
    metric: payload_compression
    at_least: 100
YAML
}
commit() {  # commit DATE SUBJECT: commits everything, dated DATE (UTC); prints the hash
  git add -A && GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2" &&
    git rev-parse HEAD
}
short() { echo "${1:0:10}"; }

claims -5
A=$(commit 2026-01-02T03:04:05Z "Claims: top-k against dense")
claims -3
B=$(commit 2026-01-03T00:00:00Z "Claims: the accuracy bound from the paper's table")
"$WRITER" results/fixture.db "$B" || exit 1
claims 1
C=$(commit 2026-01-05T12:00:00Z "Claims: a tighter accuracy bound")

report() {  # report: the document of the fixture suite into docs/fixture.md
  "$CEDAR" report results/fixture.db --suite fixture --claims experiments/fixture.yaml \
    --document docs/fixture.md > /dev/null 2> "$WORK/report.log" || cat "$WORK/report.log"
}
report
doc=$(cat docs/fixture.md)
history=$(sed -n '/^## Claim history/,/^## /p' docs/fixture.md)
check "the document has a claim history" contains "$doc" "## Claim history"
check "it names the runs' revision B and its date" \
  contains "$history" "The runs recorded revision $(short "$B") (committed 2026-01-03T00:00:00Z)"
check "commit A introduced the claim, before the runs" contains "$history" \
  "| $(short "$A") | 2026-01-02T03:04:05Z | Claims: top-k against dense | before the runs | top-k keeps dense SGD's accuracy (topk · accuracy_gap) | introduced: ≥ -5 |"
check "commit B edited the bound, before the runs" contains "$history" \
  "| $(short "$B") | 2026-01-03T00:00:00Z | Claims: the accuracy bound from the paper's table | before the runs | top-k keeps dense SGD's accuracy (topk · accuracy_gap) | at_least: -5 → -3 |"
check "commit C edited the bound, after the runs" contains "$history" \
  "| $(short "$C") | 2026-01-05T12:00:00Z | Claims: a tighter accuracy bound | after the runs | top-k keeps dense SGD's accuracy (topk · accuracy_gap) | at_least: -3 → 1 |"
check "the accounting claim, never edited, appears once" \
  equals "$(grep -c 'topk · payload_compression' <<< "$history")" 1
# Seeds 1-3 lose 0.41, 0.82 and 1.23 points: paired 95% interval [-1.84, 0.199].
check "the old bound with its verdict, the new bound with its verdict" contains "$history" \
  "| at_least: -3 → 1 | reproduced: claimed ≥ -3; 95% interval [-1.838, 0.1985] | not reproduced: claimed ≥ 1; 95% interval [-1.838, 0.1985] |"
check "the verdicts today follow the bound now" contains "$doc" \
  "| topk | accuracy_gap | ≥ 1 | 3 vs 3, paired | -0.82 | [-1.838, 0.1985] | ±1.018 | not reproduced |"
check "the claims' section says a claim changed after the runs" contains "$doc" \
  "**1 claim was added, edited or removed after the runs' revision $(short "$B"): see the claim history below"
check "the document is written twice the same" equals "$(report; cat docs/fixture.md)" "$doc"

claims 0.5
report
edited=$(cat docs/fixture.md)
check "an uncommitted edit of the claim changes the document" \
  bash -c '[ "$1" != "$2" ]' _ "$edited" "$doc"
check "the edit is listed as not committed" contains "$edited" \
  "| not committed | – | – | after the runs | top-k keeps dense SGD's accuracy (topk · accuracy_gap) | at_least: 1 → 0.5 |"
check "with the verdict under the bound now" contains "$edited" \
  "| at_least: -3 → 0.5 | reproduced: claimed ≥ -3; 95% interval [-1.838, 0.1985] | not reproduced: claimed ≥ 0.5;"
check "cedar report warns that the claim file has uncommitted changes" \
  contains "$(cat "$WORK/report.log")" "has claim changes not committed"

# A copy without its repository (a source archive): one line, and the document still written.
cp -r experiments results "$ARCHIVE/" && mkdir "$ARCHIVE/docs"
(cd "$ARCHIVE" && GIT_CEILING_DIRECTORIES="$(dirname "$ARCHIVE")" "$CEDAR" report \
  results/fixture.db --suite fixture --claims experiments/fixture.yaml \
  --document docs/fixture.md > /dev/null 2>&1)
check "without git the history is one line" contains "$(cat "$ARCHIVE/docs/fixture.md")" \
  "## Claim history

No git history here (git missing, or a copy without its repository): the claims' history cannot be shown."
finish
