#pragma once
// A temporary folder under $TMPDIR (else /tmp), removed with everything in it when it goes out of
// scope: where `--regenerate` restores the results dumps a document is written from.
#include <ftw.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace cedar {

struct TemporaryFolder {
  std::string path;
  TemporaryFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/cedar-regenerate-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error(pattern + ": cannot create a temporary folder");
    path = pattern;
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  // Not std::filesystem::remove_all: in executables linked with the LibTorch wheel it binds to
  // the wheel's own copy, which crashes.
  ~TemporaryFolder() {
    ::nftw(
        path.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
};

}  // namespace cedar
