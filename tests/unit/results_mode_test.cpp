// Filesystem detection, the results mode it picks, and the lock files that hold across hosts
// (merge lock, suite claims, shard writers).
#include "results/results_mode.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "results/claim_files.h"
#include "results/filesystem.h"
#include "results/lock_file.h"
#include "results/store.h"

namespace cedar {
namespace {

std::string fresh_dir(const std::string& name) {
  auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Sets CEDAR_TEST_FILESYSTEM for one scope.
struct ForcedFilesystem {
  explicit ForcedFilesystem(const char* type) { ::setenv("CEDAR_TEST_FILESYSTEM", type, 1); }
  ~ForcedFilesystem() { ::unsetenv("CEDAR_TEST_FILESYSTEM"); }
};

// A pid that no process has: a child that has exited and been reaped.
int64_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

void write_lock(const std::string& path, const std::string& host, int64_t pid, double heartbeat) {
  std::ofstream(path) << "host " << host << "\npid " << pid << "\ntoken t-" << pid << "\nheartbeat "
                      << std::fixed << heartbeat << "\n";
}

TEST(Filesystem, MagicNumbersOfSharedFilesystems) {
  // statfs f_type values as linux/magic.h and the filesystems' own headers define them.
  const std::pair<uint64_t, const char*> shared[] = {
      {0x6969, "nfs"},        {0x0BD00BD0, "lustre"}, {0x47504653, "gpfs"},
      {0x19830326, "beegfs"}, {0x00C36400, "cephfs"}, {0xFF534D42, "cifs"},
      {0xFE534D42, "smb2"},   {0x01021997, "9p"},     {0x65735546, "fuse"}};
  for (const auto& [magic, type] : shared) {
    const FilesystemInfo fs = filesystem_from_magic(magic);
    EXPECT_EQ(fs.type, type);
    EXPECT_TRUE(fs.network) << type;
  }
}

TEST(Filesystem, MagicNumbersOfLocalFilesystems) {
  const std::pair<uint64_t, const char*> local[] = {{0xEF53, "ext4"},
                                                    {0x58465342, "xfs"},
                                                    {0x9123683E, "btrfs"},
                                                    {0x01021994, "tmpfs"},
                                                    {0x794C7630, "overlayfs"}};
  for (const auto& [magic, type] : local) {
    const FilesystemInfo fs = filesystem_from_magic(magic);
    EXPECT_EQ(fs.type, type);
    EXPECT_FALSE(fs.network) << type;
  }
}

TEST(Filesystem, AnUnknownTypeCountsAsShared) {
  const FilesystemInfo fs = filesystem_from_magic(0x12345678);
  EXPECT_EQ(fs.type, "unknown (0x12345678)");
  EXPECT_TRUE(fs.network);
}

TEST(Filesystem, APathNotYetCreatedIsOnItsParentsFilesystem) {
  const std::string dir = fresh_dir("fs_parent");
  EXPECT_EQ(filesystem_of(dir + "/not/yet/results.db").type, filesystem_of(dir).type);
}

TEST(ResultsMode, AutoPicksShardsOnASharedFilesystem) {
  const std::string db = fresh_dir("mode_auto") + "/r.db";
  {
    ForcedFilesystem nfs("nfs");
    const ResolvedResultsMode m = resolve_results_mode("auto", db);
    EXPECT_EQ(m.mode, ResultsMode::kShards);
    EXPECT_EQ(m.filesystem.type, "nfs");
    EXPECT_EQ(m.explain(), "shards (auto: nfs is shared between hosts)");
    EXPECT_EQ(resolve_results_mode("wal", db).mode, ResultsMode::kWal);  // as configured
  }
  {
    ForcedFilesystem ext4("ext4");
    EXPECT_EQ(resolve_results_mode("auto", db).mode, ResultsMode::kWal);
    EXPECT_EQ(resolve_results_mode("shards", db).mode, ResultsMode::kShards);
  }
}

TEST(ResultsMode, BadSettingsNameTheValue) {
  try {
    resolve_results_mode("nfs", "r.db");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'nfs'"), std::string::npos) << e.what();
  }
  ForcedFilesystem bogus("zork");
  EXPECT_THROW(filesystem_of("."), std::invalid_argument);
}

TEST(LockFile, OneHolderAtATime) {
  const std::string path = fresh_dir("lock_one") + "/x.lock";
  auto first = LockFile::try_acquire(path, 60);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->held());
  EXPECT_FALSE(LockFile::try_acquire(path, 60));  // this process is alive: not stale
  const auto owner = read_lock_owner(path);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->host, this_host());
  EXPECT_EQ(owner->pid, ::getpid());
  first.reset();
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(LockFile::try_acquire(path, 60));
}

TEST(LockFile, BrokenOnlyWhenStale) {
  const std::string dir = fresh_dir("lock_stale");
  const double now = unix_now();
  // This host, process gone: stale at once, whatever its heartbeat.
  write_lock(dir + "/dead.lock", this_host(), dead_pid(), now);
  EXPECT_TRUE(LockFile::try_acquire(dir + "/dead.lock", 60));
  // Another host, fresh heartbeat: held.
  write_lock(dir + "/far.lock", "another-host", 1, now);
  EXPECT_FALSE(LockFile::try_acquire(dir + "/far.lock", 60));
  // Another host, heartbeat older than the limit: stale.
  write_lock(dir + "/old.lock", "another-host", 1, now - 61);
  auto taken = LockFile::try_acquire(dir + "/old.lock", 60);
  ASSERT_TRUE(taken);
  EXPECT_EQ(read_lock_owner(dir + "/old.lock")->pid, ::getpid());
}

TEST(LockFile, HeartbeatAdvancesAndABrokenLockIsNotHeld) {
  const std::string path = fresh_dir("lock_beat") + "/x.lock";
  auto lock = LockFile::try_acquire(path, 0.6);  // a heartbeat every 0.1 s
  ASSERT_TRUE(lock);
  const double first = read_lock_owner(path)->heartbeat;
  double later = first;
  for (int i = 0; i < 200 && later <= first; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    later = read_lock_owner(path)->heartbeat;
  }
  EXPECT_GT(later, first);
  std::filesystem::remove(path);  // broken by another process
  write_lock(path, "another-host", 1, unix_now());
  EXPECT_FALSE(lock->held());
  lock.reset();
  EXPECT_TRUE(std::filesystem::exists(path));  // not ours: left alone
}

TEST(ClaimFiles, AClaimHoldsUntilReleased) {
  const std::string db = fresh_dir("claims") + "/r.db";
  ClaimFiles mine(db), theirs(db);
  EXPECT_TRUE(mine.try_claim("abc"));
  EXPECT_TRUE(mine.try_claim("abc"));  // already ours
  EXPECT_FALSE(theirs.try_claim("abc"));
  EXPECT_TRUE(theirs.try_claim("def"));
  mine.release("abc");
  EXPECT_TRUE(theirs.try_claim("abc"));
  EXPECT_TRUE(std::filesystem::exists(shards_dir(db) + "/claims/abc.lock"));
}

}  // namespace
}  // namespace cedar
