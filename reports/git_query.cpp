#include "reports/git_query.h"

#include <sys/wait.h>

#include <cstdio>

namespace cedar {
namespace {

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs git; its exit status (-1 when it could not start), standard output into *out.
int run_git(const std::string& dir, const std::vector<std::string>& args, std::string* out) {
  // No pager, no user configuration that changes output (colours, dates), no prompts.
  std::string cmd =
      "GIT_PAGER=cat GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 git -c color.ui=never -c "
      "log.showSignature=false -C " +
      shell_quoted(dir);
  for (const auto& a : args) cmd += " " + shell_quoted(a);
  cmd += " 2>/dev/null";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    if (out) out->append(buf, n);
  const int status = ::pclose(p);
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::optional<std::string> git_output(const std::string& dir,
                                      const std::vector<std::string>& args) {
  std::string out;
  if (run_git(dir, args, &out) != 0) return std::nullopt;
  return out;
}

bool git_succeeds(const std::string& dir, const std::vector<std::string>& args) {
  return run_git(dir, args, nullptr) == 0;
}

}  // namespace cedar
