#include "platform/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace cedar {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int error,
                       const std::string& written) {
  std::remove(written.c_str());
  throw std::runtime_error("cannot " + what + " " + path + ": " + std::strerror(error));
}

}  // namespace

void publish_file(const std::string& written, const std::string& path,
                  const PublishOptions& options) {
  if (options.durable) {
    const int fd = ::open(written.c_str(), O_RDONLY);
    if (fd < 0) fail("open", written, errno, written);
    const int rc = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (rc != 0) fail("sync", written, error, written);
  }
  if (options.mode != 0 && ::chmod(written.c_str(), options.mode) != 0)
    fail("set the permissions of", written, errno, written);
  if (std::rename(written.c_str(), path.c_str()) != 0) fail("rename into", path, errno, written);
}

void write_file_atomically(const std::string& path, std::string_view bytes,
                           const PublishOptions& options) {
  const std::string partial = path + ".partial";
  std::FILE* f = std::fopen(partial.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + partial + ": " + std::strerror(errno));
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_error = errno;
  if (std::fclose(f) != 0 || !wrote) fail("write", partial, wrote ? errno : write_error, partial);
  publish_file(partial, path, options);
}

}  // namespace cedar
