// The process helpers of platform/process.h and runner/suite/launcher.h: exit statuses of real
// child processes (exit codes, signals, a program that does not exist), the child's signal mask,
// and quoting for bash.
#include "runner/suite/launcher.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "platform/process.h"

namespace cedar {
namespace {

TEST(Launcher, RunProcessReturnsTheExitCode) {
  EXPECT_EQ(run_process({"sh", "-c", "exit 0"}), 0);
  EXPECT_EQ(run_process({"sh", "-c", "exit 3"}), 3);
}

TEST(Launcher, KilledChildIs128PlusTheSignal) {
  EXPECT_EQ(run_process({"sh", "-c", "kill -9 $$"}), 128 + SIGKILL);
}

TEST(Launcher, MissingProgramDoesNotStart) {
  EXPECT_EQ(spawn_process({"cedar-no-such-program"}, nullptr), -1);
  EXPECT_EQ(spawn_process({}, nullptr), -1);
  int error = 0;
  EXPECT_EQ(spawn_process({"cedar-no-such-program"}, nullptr, &error), -1);
  EXPECT_EQ(error, ENOENT);
  try {
    run_process({"cedar-no-such-program", "x"});
    ADD_FAILURE() << "a missing program started";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot start cedar-no-such-program");
  }
}

// cedar blocks SIGTERM in its own threads; a child must still die of one.
TEST(Launcher, ChildStartsWithNoBlockedSignals) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  const pid_t pid = spawn_process({"sh", "-c", "kill -TERM $$; exit 5"}, nullptr);
  ASSERT_GT(pid, 0);
  const int status = wait_exit_status(pid);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(status, 128 + SIGTERM);
}

TEST(Launcher, ShellWordQuotesOnlyWhatBashWouldSplitOrExpand) {
  EXPECT_EQ(shell_word("data.train_limit=2000"), "data.train_limit=2000");
  EXPECT_EQ(shell_word("/work/build/cedar"), "/work/build/cedar");
  EXPECT_EQ(shell_word("algorithm={name: dgc}"), "'algorithm={name: dgc}'");
  EXPECT_EQ(shell_word("a;b$HOME"), "'a;b$HOME'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word(""), "''");
}

}  // namespace
}  // namespace cedar
