#include "runner/train/disk_space.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <stdexcept>

namespace cedar {
namespace {

std::string existing_parent(std::string path) {
  struct statvfs st {};
  while (!path.empty() && statvfs(path.c_str(), &st) != 0) {
    auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return path.empty() ? "." : path;
}

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

int64_t free_bytes(const std::string& path) {
  struct statvfs st {};
  if (statvfs(existing_parent(path).c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

void require_free_space(const std::string& path, int64_t needed, const std::string& what) {
  const int64_t avail = free_bytes(path);
  if (avail >= 0 && avail < needed)
    throw std::runtime_error("not enough free space for " + what + " '" + path + "': '" +
                             existing_parent(path) + "' has " + megabytes(avail) + " free, about " +
                             megabytes(needed) + " needed");
}

}  // namespace cedar
