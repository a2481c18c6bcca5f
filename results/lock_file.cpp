#include "results/lock_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "results/store.h"
#include "results/uuid.h"

namespace cedar {
namespace {

// The heartbeat is the file's last line, fixed width, so the owner rewrites it in place.
std::string heartbeat_text(double t) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "heartbeat %020.6f\n", t);
  return buf;
}

std::string owner_text(const LockOwner& o) {
  return "host " + o.host + "\npid " + std::to_string(o.pid) + "\ntoken " + o.token + "\n";
}

bool process_alive(int64_t pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Seconds between heartbeats: several per stale period.
double beat_interval(double stale_seconds) { return std::clamp(stale_seconds / 6, 0.05, 10.0); }

}  // namespace

std::optional<LockOwner> read_lock_owner(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  LockOwner o;
  std::string key, value;
  bool complete = false;
  while (in >> key >> value) {
    if (key == "host")
      o.host = value;
    else if (key == "pid")
      o.pid = std::atoll(value.c_str());
    else if (key == "token")
      o.token = value;
    else if (key == "heartbeat") {
      o.heartbeat = std::atof(value.c_str());
      complete = !o.token.empty() && o.heartbeat > 0;
    }
  }
  if (!complete) {  // being written right now: as fresh as the file
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    o = LockOwner{};
    o.heartbeat = double(st.st_mtim.tv_sec) + 1e-9 * double(st.st_mtim.tv_nsec);
  }
  return o;
}

bool lock_owner_stale(const LockOwner& owner, double stale_seconds) {
  if (unix_now() - owner.heartbeat > stale_seconds) return true;
  return owner.host == this_host() && owner.pid > 0 && !process_alive(owner.pid);
}

std::string describe_lock_owner(const LockOwner& o) {
  if (o.token.empty()) return "an owner still writing the lock file";
  return o.host + ":" + std::to_string(o.pid) + ", heartbeat " +
         std::to_string(static_cast<int64_t>(unix_now() - o.heartbeat)) + " s ago";
}

LockFile::LockFile(std::string path, int fd, LockOwner owner, double stale_seconds)
    : path_(std::move(path)), fd_(fd), owner_(std::move(owner)) {
  heartbeat_ = std::thread([this, stale_seconds] {
    const auto every = std::chrono::duration<double>(beat_interval(stale_seconds));
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_cv_.wait_for(lock, every, [this] { return stop_; })) beat();
  });
}

std::unique_ptr<LockFile> LockFile::try_acquire(const std::string& path, double stale_seconds) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      LockOwner me{this_host(), static_cast<int64_t>(::getpid()), unix_now(), new_uuid()};
      const std::string text = owner_text(me) + heartbeat_text(me.heartbeat);
      if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
          ::fsync(fd) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        ::unlink(path.c_str());
        throw std::runtime_error(path + ": cannot write the lock file: " + why);
      }
      return std::unique_ptr<LockFile>(new LockFile(path, fd, me, stale_seconds));
    }
    if (errno != EEXIST)
      throw std::runtime_error(path + ": cannot create the lock file: " + std::strerror(errno));
    const std::optional<LockOwner> owner = read_lock_owner(path);
    if (!owner) continue;  // released in between: try again
    if (!lock_owner_stale(*owner, stale_seconds)) return nullptr;
    // Break it: move it aside under a name of our own, and keep it broken only if what moved is
    // the stale lock we judged (another process may have broken and retaken it meanwhile).
    const std::string aside = path + ".broken-" + new_uuid();
    if (::rename(path.c_str(), aside.c_str()) != 0) continue;
    const std::optional<LockOwner> moved = read_lock_owner(aside);
    if (moved && moved->token != owner->token && !lock_owner_stale(*moved, stale_seconds)) {
      (void)::link(aside.c_str(), path.c_str());  // put a live lock back (fails if retaken)
    }
    ::unlink(aside.c_str());
  }
  return nullptr;
}

std::unique_ptr<LockFile> LockFile::acquire(const std::string& path, double stale_seconds,
                                            double wait_seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(wait_seconds));
  for (;;) {
    if (auto lock = try_acquire(path, stale_seconds)) return lock;
    if (std::chrono::steady_clock::now() >= deadline) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void LockFile::beat() {
  const std::string text = heartbeat_text(unix_now());
  const off_t at = static_cast<off_t>(owner_text(owner_).size());
  // Writes through the descriptor: if the file was broken and moved aside, this lands there.
  if (::pwrite(fd_, text.data(), text.size(), at) == static_cast<ssize_t>(text.size()))
    (void)::fdatasync(fd_);
}

bool LockFile::held() const {
  const std::optional<LockOwner> now = read_lock_owner(path_);
  return now && now->token == owner_.token;
}

LockFile::~LockFile() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  heartbeat_.join();
  if (held()) ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace cedar
