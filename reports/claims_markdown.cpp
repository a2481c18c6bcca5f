// The claims' verdicts as markdown: findings with their intervals, then the accounting checks.
#include <cstdio>
#include <sstream>

#include "reports/claims.h"

namespace cedar {
namespace {

const char* const kFindingsLegend =
    "A finding is tested over seeds: reproduced when the 95% confidence interval lies entirely "
    "inside the claimed region, not reproduced when entirely outside it, inconclusive otherwise; "
    "fewer than 3 seeds in an arm read \"insufficient seeds\". Gaps are paired by seed where both "
    "arms ran the same seeds (Student t over the differences), else compared with Welch's t; "
    "ratios are intervals of the geometric mean (t on the log-ratios; times never paired). "
    "`resolves`: the interval's half-width, the smallest margin these seeds can tell apart "
    "(in the metric's units: accuracy points, or f − f* for a gap; for a ratio the factor ×/÷).";
const char* const kAccountingHeading =
    "Accounting checks: follow from the format; they can only fail if metering is broken. Bytes "
    "of all seeds together; never counted as reproductions.";

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string claimed(const Claim& c) {
  std::string s;
  if (c.at_least) s += "≥ " + num(*c.at_least);
  if (c.at_most) s += (s.empty() ? "" : ", ") + std::string("≤ ") + num(*c.at_most);
  return s;
}

std::string metric(const Claim& c) {
  std::string m = c.metric;
  if (m == "modeled_speedup") m += " (" + c.profile + ")";
  if (!c.window.whole_run()) m += ", " + c.window.describe();
  return m;
}

std::string run(const Claim& c) { return c.baseline.empty() ? c.run : c.run + " vs " + c.baseline; }

std::string seeds(const ClaimVerdict& v, bool method) {
  std::string s = v.seeds ? std::to_string(v.seeds) : "–";
  if (v.baseline_seeds) s += " vs " + std::to_string(v.baseline_seeds);
  if (method && v.low) s += v.paired ? ", paired" : v.baseline_seeds ? ", Welch" : "";
  return s;
}

// e.g. "not separated from control gradient-dropping: method − control in [-0.3, 0.8]".
std::string control(const ClaimVerdict& v) {
  const bool tested = v.control_low.has_value();
  std::string s = tested ? v.control_verdict + " from control " + v.claim.control
                         : "control " + v.claim.control + ": " + v.control_verdict;
  if (tested)
    s += std::string(": method ") + (v.ratio ? "÷" : "−") + " control in [" + num(*v.control_low) +
         ", " + num(*v.control_high) + "]";
  return s;
}

void count(std::ostringstream& s, const std::vector<ClaimVerdict>& verdicts,
           const std::vector<std::string>& kinds_of_verdict) {
  bool first = true;
  for (const auto& name : kinds_of_verdict) {
    int n = 0;
    for (const auto& v : verdicts) n += v.verdict == name;
    s << (first ? "" : ", ") << n << " " << name;
    first = false;
  }
}

void findings(std::ostringstream& s, const std::vector<ClaimVerdict>& verdicts) {
  s << "| claim | source | paper's setting | checked on | run | metric | claimed | seeds | "
       "mean | 95% interval | resolves | verdict |\n"
       "|---|---|---|---|---|---|---|---|---:|---|---:|---|\n";
  for (const auto& v : verdicts) {
    const Claim& c = v.claim;
    const std::string checked = !c.reduced.empty()   ? "reduced scale: " + c.reduced
                                : !c.setting.empty() ? "the paper's setting"
                                                     : "–";
    std::string interval = "–", margin = "–";
    if (v.low) {
      interval = "[" + num(*v.low) + ", " + num(*v.high) + "]";
      margin = (v.ratio ? "×/÷" : "±") + num(*v.margin);
    }
    std::string verdict = v.verdict;
    if (v.measured && !c.reduced.empty()) verdict += ", reduced scale";
    if (!v.control_verdict.empty()) verdict += "; " + control(v);
    s << "| " << c.text << " | " << c.source << " | " << (c.setting.empty() ? "–" : c.setting)
      << " | " << checked << " | " << run(c) << " | " << metric(c) << " | " << claimed(c) << " | "
      << seeds(v, true) << " | " << (v.measured ? num(*v.measured) : "–") << " | " << interval
      << " | " << margin << " | " << verdict << " |\n";
  }
  s << "\nFindings: ";
  count(s, verdicts,
        {"reproduced", "not reproduced", "inconclusive", "not discriminating", "insufficient seeds",
         "not enough runs"});
  s << ". " << kFindingsLegend;
  for (const auto& v : verdicts)
    if (!v.claim.control.empty()) {
      s << " A finding with a negative control (a method that should do worse) that would read "
           "reproduced reads \"not discriminating\" where the interval of method − control holds "
           "0: the seeds cannot tell the two apart, so the test could not have failed the method.";
      break;
    }
  s << "\n";
}

void accounting(std::ostringstream& s, const std::vector<ClaimVerdict>& verdicts) {
  s << kAccountingHeading;
  for (const auto& v : verdicts)
    if (v.claim.metric == "final_gap") {
      s << " A final gap is a fixed point the construction places, checked on every seed (the "
           "seed nearest the bound shown): it can only fail if the construction's code is broken.";
      break;
    }
  s << "\n\n"
    << "| claim | source | paper's setting | run | metric | claimed | measured | seeds | check |\n"
       "|---|---|---|---|---|---|---:|---|---|\n";
  for (const auto& v : verdicts) {
    const Claim& c = v.claim;
    s << "| " << c.text << " | " << c.source << " | " << (c.setting.empty() ? "–" : c.setting)
      << " | " << run(c) << " | " << metric(c) << " | " << claimed(c) << " | "
      << (v.measured ? num(*v.measured) : "–") << " | " << seeds(v, false) << " | " << v.verdict
      << " |\n";
  }
  s << "\nAccounting: ";
  count(s, verdicts, {"holds", "does not hold", "not enough runs"});
  s << ".\n";
}

}  // namespace

std::string render_claims_markdown(const std::vector<ClaimVerdict>& verdicts) {
  std::vector<ClaimVerdict> found, accounted;
  for (const auto& v : verdicts) (v.claim.kind == "accounting" ? accounted : found).push_back(v);
  std::ostringstream s;
  if (!found.empty()) findings(s, found);
  if (!found.empty() && !accounted.empty()) s << "\n";
  if (!accounted.empty()) accounting(s, accounted);
  return s.str();
}

}  // namespace cedar
