// The claims' history as markdown (reports/claim_history.h).
#include <cstdio>
#include <sstream>

#include "reports/claim_history.h"

namespace cedar {
namespace {

// Table cells: a '|' would end the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string label(const Claim& c) {
  return cell((c.text.empty() ? std::string() : c.text + " ") + "(" + c.run + " · " + c.metric +
              ")");
}

std::string changes(const std::vector<FieldChange>& list) {
  std::string s;
  for (const auto& f : list)
    s += (s.empty() ? "" : "; ") + f.field + ": " + f.before + " → " + f.after;
  return cell(s);
}

std::string change(const ClaimEvent& e) {
  if (e.what == "introduced") return "introduced: " + claim_bounds(e.claim.claim);
  if (e.what == "removed") return "removed (was " + claim_bounds(e.claim.claim) + ")";
  return changes(e.changes);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// "inconclusive: claimed ≥ -1; 95% interval [-1.8, 0.3]".
std::string verdict(const ClaimRevision& r, const ClaimJudge& judge) {
  const ClaimVerdict v = judge(r.claim);
  std::string s = v.verdict + ": claimed " + claim_bounds(r.claim);
  if (v.low)
    s += "; 95% interval [" + num(*v.low) + ", " + num(*v.high) + "]";
  else if (v.measured)
    s += "; measured " + num(*v.measured);
  return cell(s);
}

void events(std::ostringstream& s, const ClaimHistory& h) {
  s << "| commit | date (UTC) | subject | when | claim | change |\n"
       "|---|---|---|---|---|---|\n";
  for (const auto& e : h.events)
    s << "| " << (e.commit.empty() ? "not committed" : e.commit) << " | "
      << (e.date.empty() ? "–" : e.date) << " | " << (e.subject.empty() ? "–" : cell(e.subject))
      << " | " << (e.after_runs ? "after the runs" : "before the runs") << " | "
      << label(e.claim.claim) << " | " << change(e) << " |\n";
}

void differences(std::ostringstream& s, const ClaimHistory& h, const ClaimJudge& judge) {
  if (h.since_runs.empty()) {
    s << "\nNo claim differs between the runs' revision and `" << h.file
      << "` now: the verdicts above judge the claims as they stood when the runs were made.\n";
    return;
  }
  s << "\nClaims that differ between the runs' revision " << h.runs_commit << " and `" << h.file
    << "` now, judged on the same runs under either version:\n\n"
    << "| claim | change | verdict under the claim at " << h.runs_commit
    << " | verdict under the claim now |\n|---|---|---|---|\n";
  for (const auto& d : h.since_runs) {
    const std::string what = !d.at_runs ? "added after the runs"
                             : !d.now   ? "removed after the runs"
                                        : changes(d.changes);
    s << "| " << label(d.now ? d.after.claim : d.before.claim) << " | " << what << " | "
      << (d.at_runs ? verdict(d.before, judge) : "–") << " | "
      << (d.now ? verdict(d.after, judge) : "–") << " |\n";
  }
}

}  // namespace

std::string claim_history_notice(const ClaimHistory& h) {
  if (h.since_runs.empty()) return "";
  const size_t n = h.since_runs.size();
  return std::to_string(n) + (n == 1 ? " claim was" : " claims were") +
         " added, edited or removed after the runs' revision " + h.runs_commit +
         ": see the claim history below for the verdict under each version.";
}

std::string render_claim_history_markdown(const ClaimHistory& h, const ClaimJudge& judge) {
  std::ostringstream s;
  if (!h.unavailable.empty()) return h.unavailable + "\n";
  s << "From the git history of `" << h.file
    << "` (a claim is known by its run and metric; each revision's claims read and compared "
       "field by field). The runs recorded revision "
    << h.runs_commit << " (committed " << h.runs_date << ")";
  if (h.revisions.size() > 1) {
    s << "; they were built at " << h.revisions.size() << " revisions (";
    for (size_t i = 0; i < h.revisions.size(); ++i) s << (i ? ", " : "") << h.revisions[i];
    s << "), and the newest is the one compared";
  }
  if (h.unresolved) s << "; " << h.unresolved << " run(s) name a revision git does not know";
  if (h.uncommitted)
    s << "; " << h.uncommitted
      << " run(s) were built with uncommitted changes, which may have held other claims";
  s << ".\n\n";
  if (h.events.empty())
    s << "No commit changed a claim.\n";
  else
    events(s, h);
  differences(s, h, judge);
  return s.str();
}

}  // namespace cedar
