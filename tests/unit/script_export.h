#pragma once
// Python-written compressors for the tests: the sources exported to TorchScript modules with
// Cedar's venv Python (as tests/differential/ finds it), once per test process.
#include <map>
#include <string>
#include <vector>

namespace cedar::testing {

// CEDAR_PYTHON, else ~/.cache/cedar/venv/bin/python; "" when it is not an executable file.
std::string venv_python();

// A folder of its own under TEST_TMPDIR (or /tmp) for this process's scripts.
std::string script_dir();

// Writes `source` to script_dir()/<stem>.py and returns its path.
std::string write_script(const std::string& stem, const std::string& source);

// The .pt exported from each of `sources` (paths; examples/ relative to CEDAR_SOURCE_DIR when
// they are relative), by stem, all by one run of tests/unit/export_scripts.py. Throws
// std::runtime_error with Python's output when the export fails.
std::map<std::string, std::string> export_scripts(const std::vector<std::string>& sources);

// 1-based line of the first line of file `path` containing `marker` (0: none).
int line_of(const std::string& path, const std::string& marker);

// Skips the test when Cedar's venv Python is absent.
#define SKIP_WITHOUT_VENV_PYTHON()                                                          \
  if (cedar::testing::venv_python().empty())                                                \
    GTEST_SKIP() << "no Cedar venv Python with torch (set CEDAR_PYTHON) to export scripts"; \
  static_assert(true)

}  // namespace cedar::testing
