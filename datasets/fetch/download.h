#pragma once
// One file of a data set made available and verified: taken from --from, found already
// downloaded, or downloaded with curl (resuming a .part). Used by fetch.cpp. No LibTorch here.
#include <string>

#include "datasets/fetch/catalog.h"
#include "datasets/fetch/fetch.h"

namespace cedar {

struct LocalFile {
  std::string path;         // a file with the catalogued size and checksums
  std::string source;       // the URL or path it came from
  bool downloaded = false;  // it lies in the downloads folder (fetch may move or remove it)
};

// A verified copy of `file` of `source`. `downloads` is <root>/.downloads/<name>. Throws
// ChecksumError (a bad download is removed first; a file given with --from is left alone), or
// std::runtime_error when it cannot be had (every URL failed: a .part stays for resuming).
LocalFile obtain_file(const DataSource& source, const RemoteFile& file, const FetchOptions& options,
                      const std::string& downloads);

// Whether `s` is a URL (scheme://...) rather than a path.
bool is_url(const std::string& s);

}  // namespace cedar
