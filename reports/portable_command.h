#pragma once
// A run's recorded command line (the provenance's "command") as a reader of the repository can
// type it at its root: the program as build/cedar, the results database as the report's own
// (repository-relative), and an absolute path to the experiment file as the file's path in the
// repository. Absolute paths of the machine that ran it (a build folder elsewhere, a database
// under /tmp) would not reproduce anywhere else. No LibTorch here.
#include <string>

namespace cedar {

// `command` with: its first word, when a path to a program named cedar, as build/cedar; the
// value of --db (or --db=) as `db`; and every absolute path ending in "/" + `experiment` as
// `experiment` (nothing done for an empty `experiment`). Other words are kept as recorded,
// quoting included.
std::string portable_command(const std::string& command, const std::string& db,
                             const std::string& experiment);

}  // namespace cedar
