#pragma once
// Fetching a catalogued data set into the data root: download (curl, resumable), verify (size
// and every catalogued checksum), unpack (tar) into a temporary folder under the root, and only
// then rename it into place with a marker. A failure at any point leaves no data-set folder
// behind, and a second fetch of a data set whose marker is present does nothing. No LibTorch here.
//
// Under the root:
//   <root>/<dir>/                       the data set, in the layout its reader expects
//   <root>/<dir>/.cedar-fetched         the marker (JSON: name, source, files with checksums)
//   <root>/.downloads/<name>/<file>.part  a download in progress (resumed by the next call)
//   <root>/.downloads/<name>/unpack.*   an extraction in progress (removed when it ends)
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "datasets/fetch/catalog.h"

namespace cedar {

constexpr const char* kFetchMarker = ".cedar-fetched";

struct FetchOptions {
  std::string root = "data";
  // Files already at hand (compute nodes without internet): for a one-file data set the archive
  // itself (a path or a URL); for any data set a folder (or a base URL) holding its files by name.
  std::string from;
  // A mirror replacing the catalog's base URLs: each file is at <mirror>/<name>/<file>.
  std::string mirror;
  std::function<void(const std::string&)> say;  // progress lines (null: quiet)
  std::function<bool()> should_stop;            // asked while a tool runs; true stops the fetch
};

// A downloaded or given file whose size or checksums differ from the catalog's.
class ChecksumError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class FetchOutcome { kInstalled, kAlreadyPresent };

struct FetchResult {
  FetchOutcome outcome = FetchOutcome::kInstalled;
  std::string dir;     // where the data set is
  std::string source;  // where it came from (URL or path; for a present one, the marker's)
};

FetchResult fetch_data(const DataSource& source, const FetchOptions& options);

// <root>/<dir>.
std::string data_dir(const DataSource& source, const std::string& root);

struct DataStatus {
  enum State { kFetched, kUnmarked, kMissing } state = kMissing;
  std::string source;       // kFetched: where it came from
  uint64_t part_bytes = 0;  // bytes of unfinished downloads waiting to be resumed
};
DataStatus data_status(const DataSource& source, const std::string& root);

// "" when `path` has the catalogued size and checksums of `file`; else what differs, every
// mismatch with the value found and the one expected (and where that was published).
std::string describe_mismatch(const std::string& path, const RemoteFile& file);

// "170.1 MB" (decimal units).
std::string format_bytes(uint64_t bytes);

}  // namespace cedar
