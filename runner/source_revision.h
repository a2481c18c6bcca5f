#pragma once
// The source this build of Cedar was compiled from, taken by every build, not at configure time
// (cmake/SourceRevision.cmake, which generates the definitions). Outside a git checkout, e.g. a
// source tarball, the commit and its description are "unknown".
#include <string>

namespace cedar {

extern const char kSourceCommit[];    // HEAD's full hash
extern const char kSourceDescribe[];  // `git describe --always --tags` of HEAD
// SHA-256 of the uncommitted changes: `git diff HEAD` plus the path and content hash of each
// untracked file that git does not ignore (cmake/source_revision_step.cmake); "" for a clean tree.
extern const char kSourceDiff[];

// The code version a run records (runs.code_version) and `cedar --version` prints: the description,
// with "-dirty" appended when the tree had uncommitted changes.
inline std::string source_version() {
  return std::string(kSourceDescribe) + (kSourceDiff[0] ? "-dirty" : "");
}

}  // namespace cedar
