#include "tests/unit/script_export.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cedar::testing {
namespace {

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string source_dir() {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  if (!src) throw std::runtime_error("run through ctest (CEDAR_SOURCE_DIR)");
  return src;
}

std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

}  // namespace

std::string venv_python() {
  const char* env = std::getenv("CEDAR_PYTHON");
  const char* home = std::getenv("HOME");
  std::string py =
      env && *env ? env : std::string(home ? home : "") + "/.cache/cedar/venv/bin/python";
  return access(py.c_str(), X_OK) == 0 ? py : "";
}

std::string script_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string d = std::string(tmp ? tmp : "/tmp") + "/scripts." + std::to_string(getpid());
    std::system(("mkdir -p " + shell_quoted(d)).c_str());
    return d;
  }();
  return dir;
}

std::string write_script(const std::string& stem, const std::string& source) {
  const std::string path = script_dir() + "/" + stem + ".py";
  std::ofstream(path) << source;
  return path;
}

std::map<std::string, std::string> export_scripts(const std::vector<std::string>& sources) {
  std::string command = shell_quoted(venv_python()) + " " +
                        shell_quoted(source_dir() + "/tests/unit/export_scripts.py") + " " +
                        shell_quoted(script_dir());
  std::map<std::string, std::string> out;
  for (const std::string& s : sources) {
    command += " " + shell_quoted(s.empty() || s[0] == '/' ? s : source_dir() + "/" + s);
    out[stem_of(s)] = script_dir() + "/" + stem_of(s) + ".pt";
  }
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  if (pclose(pipe) != 0) throw std::runtime_error("exporting scripts failed: " + output);
  return out;
}

int line_of(const std::string& path, const std::string& marker) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return n;
  return 0;
}

}  // namespace cedar::testing
