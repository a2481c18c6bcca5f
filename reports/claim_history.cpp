// The claims' history from git (reports/claim_history.h): which commit introduced and edited each
// claim, and what differs between the runs' revision and the file now.
#include "reports/claim_history.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "reports/git_query.h"
#include "reports/uncommitted_runs.h"

namespace cedar {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string utc_date(const std::string& unix_seconds) {
  std::time_t t = static_cast<std::time_t>(std::stoll(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

// The commit a run names: the provenance's full hash, else its code version without "-dirty"
// (git describe's "-g<hash>" tail where there is one).
std::string named_revision(const RunProvenance& r) {
  if (!r.commit.empty() && r.commit != "unknown") return r.commit;
  std::string v = r.revision;
  const std::string dirty = "-dirty";
  if (v.size() > dirty.size() && v.compare(v.size() - dirty.size(), dirty.size(), dirty) == 0)
    v.resize(v.size() - dirty.size());
  const size_t g = v.rfind("-g");
  if (g != std::string::npos && v.find_first_not_of("0123456789abcdef", g + 2) == std::string::npos)
    v = v.substr(g + 2);
  return v;
}

std::vector<ClaimRevision> claims_at(const std::string& top, const std::string& rev,
                                     const std::string& path) {
  auto text = git_output(top, {"show", rev + ":" + path});
  return text ? parse_claim_revisions(*text) : std::vector<ClaimRevision>{};
}

// The changes from `before` to `after` as events stamped with `stamp`.
void add_events(const std::vector<ClaimRevision>& before, const std::vector<ClaimRevision>& after,
                const ClaimEvent& stamp, std::vector<ClaimEvent>& out) {
  for (const auto& p : pair_claims(before, after)) {
    ClaimEvent e = stamp;
    if (p.before < 0) {
      e.what = "introduced";
      e.claim = after[static_cast<size_t>(p.after)];
    } else if (p.after < 0) {
      e.what = "removed";
      e.claim = before[static_cast<size_t>(p.before)];
    } else {
      e.what = "edited";
      e.claim = after[static_cast<size_t>(p.after)];
      e.changes = claim_changes(before[static_cast<size_t>(p.before)], e.claim);
      if (e.changes.empty()) continue;
    }
    out.push_back(e);
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Sets h.runs_commit (full hash) from the runs' revisions; false with h.unavailable set when none
// is known here.
bool resolve_runs_revision(const std::string& top, const std::vector<RunProvenance>& runs,
                           ClaimHistory& h, std::string* full) {
  std::set<std::string> named;
  for (const auto& r : runs) {
    named.insert(named_revision(r));
    if (built_uncommitted(r.revision, r.diff)) ++h.uncommitted;
  }
  std::set<std::pair<long long, std::string>> known;  // (commit time, hash)
  std::string missing;
  for (const auto& n : named) {
    auto hash = n.empty() ? std::nullopt
                          : git_output(top, {"rev-parse", "--verify", "--quiet", n + "^{commit}"});
    auto time =
        hash ? git_output(top, {"log", "-1", "--format=%ct", trimmed(*hash)}) : std::nullopt;
    if (!time) {
      for (const auto& r : runs) h.unresolved += named_revision(r) == n;
      missing += (missing.empty() ? "" : ", ") + (n.empty() ? std::string("none") : n);
      continue;
    }
    known.insert({std::stoll(trimmed(*time)), trimmed(*hash)});
  }
  if (known.empty()) {
    h.unavailable = "The runs' revision (" + missing +
                    ") is not in this repository's history: their claims cannot be dated "
                    "against the runs.";
    return false;
  }
  for (auto it = known.rbegin(); it != known.rend(); ++it)
    h.revisions.push_back(it->second.substr(0, kCommitDigits));
  *full = known.rbegin()->second;
  h.runs_commit = full->substr(0, kCommitDigits);
  h.runs_date = utc_date(std::to_string(known.rbegin()->first));
  return true;
}

}  // namespace

ClaimHistory load_claim_history(const std::string& claim_file,
                                const std::vector<RunProvenance>& runs) {
  namespace fs = std::filesystem;
  ClaimHistory h;
  h.file = claim_file;
  const fs::path file(claim_file);
  const std::string dir = file.parent_path().empty() ? "." : file.parent_path().string();
  const auto top_out = git_output(dir, {"rev-parse", "--show-toplevel"});
  if (!top_out) {
    h.unavailable =
        "No git history here (git missing, or a copy without its repository): the "
        "claims' history cannot be shown.";
    return h;
  }
  const std::string top = trimmed(*top_out);
  if (trimmed(git_output(top, {"rev-parse", "--is-shallow-repository"}).value_or("")) == "true") {
    h.unavailable = "This repository is a shallow clone: the claims' history cannot be shown.";
    return h;
  }
  const std::string path = trimmed(
      git_output(dir, {"ls-files", "--full-name", "--", file.filename().string()}).value_or(""));
  if (path.empty()) {
    h.unavailable = "`" + claim_file + "` is not tracked by git: its claims have no history.";
    return h;
  }
  std::string runs_rev;
  if (!resolve_runs_revision(top, runs, h, &runs_rev)) return h;

  // Every commit that changed the file, in the history of HEAD or of the runs' revision, each
  // compared with its own parent (merges left out: their changes are their parents' commits).
  const auto log = git_output(top, {"log", "--full-history", "--no-merges", "--reverse",
                                    "--format=%H%x1f%ct%x1f%s", "HEAD", runs_rev, "--", path});
  for (const auto& line : split(log.value_or(""), '\n')) {
    const auto f = split(line, '\x1f');
    if (f.size() < 2) continue;
    ClaimEvent stamp;
    stamp.commit = f[0].substr(0, kCommitDigits);
    stamp.date = utc_date(f[1]);
    stamp.subject = f.size() > 2 ? f[2] : "";
    stamp.after_runs = !git_succeeds(top, {"merge-base", "--is-ancestor", f[0], runs_rev});
    add_events(claims_at(top, f[0] + "^", path), claims_at(top, f[0], path), stamp, h.events);
  }
  const std::string now_text = read_text(claim_file);
  const auto now = parse_claim_revisions(now_text);
  ClaimEvent uncommitted;
  uncommitted.after_runs = true;
  add_events(claims_at(top, "HEAD", path), now, uncommitted, h.events);

  const auto at_runs = claims_at(top, runs_rev, path);
  for (const auto& p : pair_claims(at_runs, now)) {
    ClaimDifference d;
    d.at_runs = p.before >= 0;
    d.now = p.after >= 0;
    if (d.at_runs) d.before = at_runs[static_cast<size_t>(p.before)];
    if (d.now) d.after = now[static_cast<size_t>(p.after)];
    if (d.at_runs && d.now) d.changes = claim_changes(d.before, d.after);
    if (!d.at_runs || !d.now || !d.changes.empty()) h.since_runs.push_back(d);
  }
  return h;
}

}  // namespace cedar
