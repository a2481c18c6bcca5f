#pragma once
// A lock that works on a filesystem shared between hosts: a file created with O_EXCL that names its
// owner (host, pid, a token unique to this acquisition) and a heartbeat its owner refreshes from a
// background thread. Another process breaks it only when it is stale: on the owner's host when the
// owner's process is gone, anywhere when the heartbeat is older than `stale_seconds`. The results
// store uses it for the merge lock, suite run claims and the writer of each shard.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cedar {

struct LockOwner {
  std::string host;
  int64_t pid = 0;
  double heartbeat = 0;  // unix seconds of the owner's last refresh
  std::string token;
};

// The owner named in lock file `path`; nullopt when there is no such file. A file being written
// at this moment (no complete owner yet) reads as an owner with an empty token and the file's
// modification time as heartbeat.
std::optional<LockOwner> read_lock_owner(const std::string& path);

// Stale: on this host its process is gone or its heartbeat is older than stale_seconds; on
// another host its heartbeat is older than stale_seconds.
bool lock_owner_stale(const LockOwner& owner, double stale_seconds);

// "host:pid, heartbeat 3 s ago", for messages.
std::string describe_lock_owner(const LockOwner& owner);

class LockFile {
 public:
  // Takes the lock when it is free or stale (breaking the stale one); nullptr when a live owner
  // holds it. Throws std::runtime_error naming the path when the file cannot be created.
  static std::unique_ptr<LockFile> try_acquire(const std::string& path, double stale_seconds);
  // As try_acquire, polling until `wait_seconds` have passed; nullptr if still held then.
  static std::unique_ptr<LockFile> acquire(const std::string& path, double stale_seconds,
                                           double wait_seconds);
  ~LockFile();  // stops the heartbeat and removes the file when it still names this owner
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

  // True while the file still names this owner (nobody judged it stale and broke it).
  bool held() const;
  const std::string& path() const { return path_; }

 private:
  LockFile(std::string path, int fd, LockOwner owner, double stale_seconds);
  void beat();

  std::string path_;
  int fd_;
  LockOwner owner_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread heartbeat_;
};

}  // namespace cedar
