#include "datasets/fetch/download.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/fetch/program.h"
#include "platform/atomic_file.h"
#include "platform/checksum.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

constexpr int kCurlRangeError = 33;  // the server does not support byte ranges (no resuming)

void say(const FetchOptions& o, const std::string& line) {
  if (o.say) o.say(line);
}

std::string with_slash(std::string base) {
  if (base.empty() || base.back() != '/') base += '/';
  return base;
}

// The URLs `file` is tried at, in order.
std::vector<std::string> urls_for(const DataSource& source, const RemoteFile& file,
                                  const FetchOptions& o) {
  if (is_url(o.from))
    return {source.files.size() == 1 && !o.from.empty() && o.from.back() != '/'
                ? o.from
                : with_slash(o.from) + file.name};
  if (!o.mirror.empty()) return {with_slash(o.mirror) + source.name + "/" + file.name};
  std::vector<std::string> urls;
  for (const auto& base : source.bases) urls.push_back(with_slash(base) + file.name);
  return urls;
}

int curl(const std::string& url, const fs::path& part, const FetchOptions& o) {
  std::vector<std::string> argv = {
      "curl", "--fail",        "--location", "--retry",  "3",          "--connect-timeout",
      "30",   "--continue-at", "-",          "--output", part.string()};
  if (isatty(STDERR_FILENO)) {
    argv.push_back("--progress-bar");
  } else {
    argv.push_back("--silent");
    argv.push_back("--show-error");
  }
  argv.push_back(url);
  int rc = 1;
  try {
    rc = run_program(argv, o.should_stop);
  } catch (const std::exception&) {
    if (!o.should_stop || !o.should_stop()) throw;
  }
  // Stopped by a signal (a Ctrl-C reaches curl too): no reason to try the next URL.
  if (rc != 0 && o.should_stop && o.should_stop())
    throw std::runtime_error("interrupted; the partial download " + part.string() +
                             " is kept and the next fetch resumes it");
  return rc;
}

uint64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

std::string kinds(const RemoteFile& file) {
  std::string out = file.size ? "size" : "";
  for (const auto& c : file.checksums)
    out += (out.empty() ? "" : ", ") + std::string(hash_name(c.kind));
  return out;
}

LocalFile given_file(const DataSource& source, const RemoteFile& file, const FetchOptions& o) {
  std::error_code ec;
  fs::path given = o.from;
  if (fs::is_directory(given, ec)) {
    given /= file.name;
  } else if (source.files.size() > 1) {
    throw std::invalid_argument("--from " + o.from + ": " + source.name + " has " +
                                std::to_string(source.files.size()) +
                                " files; give a folder (or a base URL) holding them by name");
  }
  if (!fs::is_regular_file(given, ec))
    throw std::invalid_argument(
        "--from: no file " + given.string() +
        (given.string() == o.from ? "" : " (" + file.name + " expected in " + o.from + ")"));
  say(o, source.name + ": checking " + given.string());
  const std::string mismatch = describe_mismatch(given.string(), file);
  if (!mismatch.empty())
    throw ChecksumError(given.string() + " is not the catalogued " + file.name + " of " +
                        source.name + ": " + mismatch +
                        "; it was given with --from and is left in place");
  say(o, source.name + ": verified " + given.string() + " (" + kinds(file) + ")");
  return {given.string(), given.string(), false};
}

}  // namespace

bool is_url(const std::string& s) { return s.find("://") != std::string::npos; }

std::string describe_mismatch(const std::string& path, const RemoteFile& file) {
  const FileDigest got = digest_file(path);
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (file.size != 0 && got.size != file.size)
    add("size is " + std::to_string(got.size) + " bytes, expected " + std::to_string(file.size));
  for (const auto& c : file.checksums) {
    if (got.of(c.kind) == c.value) continue;
    add(std::string(hash_name(c.kind)) + " is " + got.of(c.kind) + ", expected " + c.value + " (" +
        c.source + ")");
  }
  return out;
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

LocalFile obtain_file(const DataSource& source, const RemoteFile& file, const FetchOptions& o,
                      const std::string& downloads) {
  if (!o.from.empty() && !is_url(o.from)) return given_file(source, file, o);

  const fs::path done = fs::path(downloads) / file.name;
  fs::path part = done;
  part += ".part";
  std::error_code ec;
  if (fs::is_regular_file(done, ec)) {
    // Verified by an earlier call that stopped before unpacking; checked again all the same.
    if (describe_mismatch(done.string(), file).empty()) {
      say(o, source.name + ": using the verified download " + done.string());
      return {done.string(), done.string(), true};
    }
    fs::remove(done, ec);
  }

  std::string failures;
  for (const auto& url : urls_for(source, file, o)) {
    uint64_t have = size_or_zero(part);
    if (file.size != 0 && have > file.size) {
      fs::remove(part, ec);  // longer than the file can be: not a prefix of it
      have = 0;
    }
    if (file.size == 0 || have < file.size) {
      if (have > 0)
        say(o, source.name + ": resuming " + url + " at byte " + std::to_string(have) +
                   (file.size ? " of " + std::to_string(file.size) : ""));
      else
        say(o, source.name + ": downloading " + url +
                   (file.size ? " (" + format_bytes(file.size) + ")" : ""));
      int rc = curl(url, part, o);
      if (rc == kCurlRangeError) {
        say(o, source.name + ": the server cannot resume; downloading from the start");
        fs::remove(part, ec);
        rc = curl(url, part, o);
      }
      if (rc != 0) {
        failures +=
            (failures.empty() ? "" : ", ") + url + " (curl exit " + std::to_string(rc) + ")";
        continue;
      }
    }
    const std::string mismatch = describe_mismatch(part.string(), file);
    if (!mismatch.empty()) {
      fs::remove(part, ec);
      throw ChecksumError("checksum mismatch: " + part.string() + " (" + file.name + " of " +
                          source.name + ", from " + url + "): " + mismatch +
                          "; the download was removed, the next fetch starts afresh");
    }
    publish_file(part.string(), done.string());
    say(o, source.name + ": verified " + file.name + " (" + kinds(file) + ")");
    return {done.string(), url, true};
  }
  throw std::runtime_error(source.name + ": cannot download " + file.name + " from " + failures +
                           (size_or_zero(part) > 0 ? "; the partial download " + part.string() +
                                                         " is kept and the next fetch resumes it"
                                                   : ""));
}

}  // namespace cedar
