#pragma once
// The claims of one revision of a claim file, compared with another's by content: which claim is
// which (a claim is known by its run and metric, and its text where those repeat), and which of
// its fields changed. Read leniently with yaml-cpp, unlike load_claims: an old revision may lack
// keys that are required today (kind) or hold keys since removed (seed_tolerance), and must still
// be compared. No LibTorch here.
#include <string>
#include <vector>

#include "reports/claims.h"

namespace cedar {

struct ClaimRevision {
  Claim claim;                 // kind "finding" where the revision stated none (as evaluated)
  bool kind_stated = true;     // false: the revision had no kind: key
  std::string seed_tolerance;  // the removed key's value as written ("" when absent)
};

// The claims: section of a claim file's text, in file order (empty when absent or when the text
// is not YAML).
std::vector<ClaimRevision> parse_claim_revisions(const std::string& yaml_text);

// One changed field: its key and its value before and after, as written in reports.
struct FieldChange {
  std::string field, before, after;
};
std::vector<FieldChange> claim_changes(const ClaimRevision& before, const ClaimRevision& after);

// A claim in one or both of two revisions (index -1: absent from that one).
struct ClaimPair {
  int before = -1, after = -1;
};
// Pairs the claims of two revisions: first those with the same run, metric and text, then the
// same run and metric, then the same run and text (a changed metric); what is left was removed
// (before only) or introduced (after only). In the order of `after`, then the removed ones.
std::vector<ClaimPair> pair_claims(const std::vector<ClaimRevision>& before,
                                   const std::vector<ClaimRevision>& after);

// A claim's bounds as the verdict tables print them, e.g. "≥ -1, ≤ 0.5".
std::string claim_bounds(const Claim& c);

}  // namespace cedar
