#pragma once
// The history of a suite's claims, for the reports: from git, the commit that introduced each
// claim and every commit that edited it, before and after the revision the runs recorded; and
// each claim that differs, by content, between that revision and the claim file as it is now,
// with the verdict under either version (judged on the same runs). A report whose claims were
// edited after their results says so where the verdicts print.
//
// Deterministic for a repository state: commits are abbreviated to kCommitDigits hex digits,
// dates are commit dates in UTC (ISO 8601); nothing depends on the clock. Where git or the
// history is missing (a source archive, a shallow clone, runs of a revision not in this
// repository) the section is one line that says so. No LibTorch here.
#include <functional>
#include <string>
#include <vector>

#include "reports/claim_revisions.h"
#include "reports/provenance_table.h"

namespace cedar {

inline constexpr size_t kCommitDigits = 10;

// One commit's (or the uncommitted tree's) change to one claim.
struct ClaimEvent {
  std::string commit;  // abbreviated; "" for changes not committed
  std::string date, subject;
  bool after_runs = false;  // not in the history of the runs' revision
  std::string what;         // "introduced", "edited" or "removed"
  ClaimRevision claim;      // as the change left it (removed: as it was)
  std::vector<FieldChange> changes;
};

// A claim that differs between the runs' revision and the file now (one side may be absent).
struct ClaimDifference {
  bool at_runs = false, now = false;
  ClaimRevision before, after;
  std::vector<FieldChange> changes;
};

struct ClaimHistory {
  std::string file;                    // the claim file, as given
  std::string unavailable;             // why there is no history ("" when there is one)
  std::string runs_commit, runs_date;  // the revision the claims are compared at
  std::vector<std::string> revisions;  // every revision of the runs that git knows (abbreviated)
  int unresolved = 0;                  // runs whose revision git does not know
  int uncommitted = 0;                 // runs built with uncommitted changes
  std::vector<ClaimEvent> events;      // oldest first
  std::vector<ClaimDifference> since_runs;
};

// The history of the claims in `claim_file` against the revisions `runs` recorded (the newest
// one where they differ).
ClaimHistory load_claim_history(const std::string& claim_file,
                                const std::vector<RunProvenance>& runs);

// A claim's verdict on the report's runs (evaluate_claims on one claim).
using ClaimJudge = std::function<ClaimVerdict(const Claim&)>;
std::string render_claim_history_markdown(const ClaimHistory& history, const ClaimJudge& judge);
// One line for the claims' verdicts when claims changed after the runs ("" when none did).
std::string claim_history_notice(const ClaimHistory& history);

}  // namespace cedar
