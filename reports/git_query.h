#pragma once
// Reading a git repository by running `git` (the history of claim files, reports/claim_history.h).
// A missing git, a folder outside a repository or a failing command all read as "no answer",
// never as an error: a report made from a source tarball says the history is unavailable.
#include <optional>
#include <string>
#include <vector>

namespace cedar {

// The standard output of `git -C dir args...` when it exits 0; nullopt otherwise (its error
// output is discarded). Arguments are passed quoted, never through a shell's expansion.
std::optional<std::string> git_output(const std::string& dir, const std::vector<std::string>& args);

// True when `git -C dir args...` exits 0.
bool git_succeeds(const std::string& dir, const std::vector<std::string>& args);

}  // namespace cedar
