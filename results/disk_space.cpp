#include "results/disk_space.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

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

std::string nearest_existing(const std::string& path) { return existing_parent(path); }

std::string unwritable_reason(const std::string& path) {
  const std::string folder = existing_parent(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    return "'" + folder + "' is not a folder" +
           (folder == path ? "" : " (so '" + path + "' cannot be created)");
  std::string probe = (std::filesystem::path(folder) / ".cedar-probe-XXXXXX").string();
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0)
    return "cannot create files in '" + folder + "'" +
           (folder == path ? "" : " (the nearest existing folder of '" + path + "')") + ": " +
           std::strerror(errno);
  close(fd);
  unlink(name.data());
  return "";
}

int64_t database_bytes_for(int64_t steps) { return (int64_t{1} << 20) + 512 * steps; }

int64_t checkpoint_bytes_for(int64_t parameters) { return (int64_t{1} << 20) + 8 * 4 * parameters; }

void require_free_space(const std::string& path, int64_t needed, const std::string& what) {
  const int64_t avail = free_bytes(path);
  if (avail >= 0 && avail < needed)
    throw std::runtime_error("not enough free space for " + what + " '" + path + "': '" +
                             existing_parent(path) + "' has " + megabytes(avail) + " free, about " +
                             megabytes(needed) + " needed");
}

}  // namespace cedar
