#include "datasets/fetch/fetch.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/fetch/download.h"
#include "datasets/fetch/program.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void say(const FetchOptions& o, const std::string& line) {
  if (o.say) o.say(line);
}

// The marker's source when `dir` holds a readable marker of the data set `name`.
std::optional<std::string> marker_source(const fs::path& dir, const std::string& name) {
  std::ifstream in(dir / kFetchMarker);
  if (!in) return std::nullopt;
  try {
    const json m = json::parse(in);
    if (m.value("name", "") != name) return std::nullopt;
    return m.value("source", "");
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void write_marker(const fs::path& dir, const DataSource& s, const std::vector<LocalFile>& files) {
  json m;
  m["name"] = s.name;
  m["source"] =
      files.size() == 1 ? files[0].source : fs::path(files[0].source).parent_path().string();
  m["fetched_at"] = utc_now();
  json list = json::array();
  for (const auto& f : s.files) {
    json entry = {{"name", f.name}, {"size", f.size}};
    for (const auto& c : f.checksums) entry[hash_name(c.kind)] = c.value;
    list.push_back(entry);
  }
  m["files"] = list;
  std::ofstream out(dir / kFetchMarker);
  out << m.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + (dir / kFetchMarker).string());
}

// An exclusive flock on a file, so two fetches of one data set (e.g. one per node on a shared
// filesystem) never write the same download.
class FetchLock {
 public:
  FetchLock(const fs::path& file, const FetchOptions& o) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw std::runtime_error("cannot create " + file.string() + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    say(o, "waiting for another fetch of this data set to finish (" + file.string() + ")");
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw std::runtime_error("cannot lock " + file.string());
  }
  ~FetchLock() { ::close(fd_); }
  FetchLock(const FetchLock&) = delete;
  FetchLock& operator=(const FetchLock&) = delete;

 private:
  int fd_ = -1;
};

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

// Not std::filesystem::remove_all: in executables linked with the LibTorch wheel it binds to
// libtorch.so's copy, built against a newer libstdc++, and jumps to null (see
// tests/unit/testdata_writers.cpp).
void remove_tree(const fs::path& dir) {
  ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

// A fresh folder, removed with everything in it when it goes out of scope.
class TempDir {
 public:
  explicit TempDir(const fs::path& parent) {
    std::string pattern = (parent / "unpack.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a folder in " + parent.string() + ": " +
                               std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() { remove_tree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Unpacks the verified files into `tmp`; returns the folder that becomes the data set.
fs::path unpack(const DataSource& s, const std::vector<LocalFile>& files, const fs::path& tmp,
                const FetchOptions& o) {
  if (s.unpack == Unpack::kTarGz) {
    say(o, s.name + ": extracting " + files[0].path);
    const int rc = run_program({"tar", "--extract", "--gzip", "--no-same-owner", "--file",
                                files[0].path, "--directory", tmp.string()},
                               o.should_stop);
    if (rc != 0)
      throw std::runtime_error(s.name + ": cannot extract " + files[0].path + " (tar exit " +
                               std::to_string(rc) + "); nothing was installed");
  } else {
    for (size_t i = 0; i < files.size(); ++i) {
      const fs::path to = tmp / s.files[i].name;
      if (files[i].downloaded)
        fs::rename(files[i].path, to);
      else
        fs::copy_file(files[i].path, to);
    }
  }
  const fs::path content = s.top_folder.empty() ? tmp : tmp / s.top_folder;
  std::error_code ec;
  if (!fs::is_directory(content, ec))
    throw std::runtime_error(s.name + ": " + files[0].path + " has no top folder " + s.top_folder +
                             "/; nothing was installed");
  for (const auto& e : s.expect) {
    if (fs::exists(content / e, ec)) continue;
    throw std::runtime_error(s.name + ": " + files[0].path + " does not hold " + e +
                             " (the layout " + s.name +
                             "'s reader expects); nothing was installed");
  }
  return content;
}

}  // namespace

std::string data_dir(const DataSource& source, const std::string& root) {
  return (fs::path(root) / source.dir).string();
}

DataStatus data_status(const DataSource& source, const std::string& root) {
  DataStatus st;
  const fs::path dir = data_dir(source, root);
  std::error_code ec;
  if (const auto from = marker_source(dir, source.name)) {
    st.state = DataStatus::kFetched;
    st.source = *from;
  } else {
    st.state = fs::exists(dir, ec) ? DataStatus::kUnmarked : DataStatus::kMissing;
  }
  for (const auto& f : source.files) {
    const auto n =
        fs::file_size(fs::path(root) / ".downloads" / source.name / (f.name + ".part"), ec);
    if (!ec) st.part_bytes += n;
  }
  return st;
}

FetchResult fetch_data(const DataSource& s, const FetchOptions& o) {
  const fs::path root = o.root.empty() ? fs::path("data") : fs::path(o.root);
  const fs::path dir = data_dir(s, root.string());
  auto present = [&]() -> std::optional<FetchResult> {
    const auto from = marker_source(dir, s.name);
    if (!from) return std::nullopt;
    say(o,
        s.name + ": already fetched into " + dir.string() + " (from " + *from + "); nothing to do");
    return FetchResult{FetchOutcome::kAlreadyPresent, dir.string(), *from};
  };
  if (auto r = present()) return *r;
  std::error_code ec;
  auto refuse_existing = [&] {
    if (fs::exists(dir, ec))
      throw std::runtime_error(dir.string() + " exists but holds no " + kFetchMarker +
                               " marker of " + s.name +
                               " (not fetched by cedar); move it aside to fetch, or use it as it "
                               "is with data.root: " +
                               dir.string());
  };
  refuse_existing();

  const fs::path downloads = root / ".downloads" / s.name;
  fs::create_directories(downloads);
  FetchLock lock(downloads / ".lock", o);
  if (auto r = present()) return *r;  // another fetch finished it while this one waited
  refuse_existing();
  // Extractions a killed fetch left behind; none can be running while this one holds the lock.
  for (const auto& entry : fs::directory_iterator(downloads))
    if (entry.path().filename().string().rfind("unpack.", 0) == 0) remove_tree(entry.path());

  std::vector<LocalFile> files;
  for (const auto& f : s.files) files.push_back(obtain_file(s, f, o, downloads.string()));

  TempDir tmp(downloads);
  const fs::path content = unpack(s, files, tmp.path(), o);
  write_marker(content, s, files);
  // mkdtemp made the folder private; the data set is as readable as any new folder.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  fs::permissions(content, static_cast<fs::perms>(0777 & ~mask));
  fs::create_directories(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
  fs::rename(content, dir);
  if (s.unpack == Unpack::kTarGz && files[0].downloaded) fs::remove(files[0].path, ec);
  say(o, s.name + ": ready in " + dir.string());
  FetchResult r{FetchOutcome::kInstalled, dir.string(), files[0].source};
  if (files.size() > 1) r.source = fs::path(files[0].source).parent_path().string();
  return r;
}

}  // namespace cedar
