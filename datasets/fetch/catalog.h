#pragma once
// The data sets `cedar data fetch` can download: where each file is published, its size and
// checksums (each with the place it was published), and how it is unpacked under the data root
// into the layout the readers expect (datasets/readers.h). No LibTorch here.
#include <cstdint>
#include <string>
#include <vector>

#include "platform/checksum.h"

namespace cedar {

struct Checksum {
  HashKind kind = HashKind::kSha256;
  std::string value;   // lowercase hex
  std::string source;  // where the value was published
};

struct RemoteFile {
  std::string name;                 // file name at the base URL and in the downloads folder
  uint64_t size = 0;                // bytes; 0: not published
  std::vector<Checksum> checksums;  // every one must match; at least one
};

enum class Unpack {
  kTarGz,  // a gzipped tar archive, extracted
  kNone,   // kept as downloaded (MNIST's gzipped IDX files, which the IDX reader reads as they are)
};

struct DataSource {
  std::string name;         // what `cedar data fetch NAME` takes
  std::string description;  // what it is
  std::string dir;          // the folder under the data root it goes into
  // Base URLs (ending in '/'), tried in order; a file's URL is base + file name.
  std::vector<std::string> bases;
  std::vector<RemoteFile> files;
  Unpack unpack = Unpack::kTarGz;
  // The archive's single top folder that becomes `dir` itself (Imagenette's imagenette2-160/);
  // empty: the archive's content goes into `dir` (CIFAR's cifar-10-batches-bin/ inside cifar10/).
  std::string top_folder;
  std::vector<std::string> expect;  // paths under `dir` that must exist once unpacked
  std::string dataset;              // the experiment's data.name that reads it

  uint64_t total_size() const;
};

// The built-in catalog, in the order `cedar data list` prints it.
const std::vector<DataSource>& builtin_data_sources();

// Entries of a JSON catalog file (a mirror's own archives, or a test's) applied over `catalog`:
//   { "NAME": { "base": URL | "bases": [URL, ...],
//               "files": [ { "name": F, "size": N, "sha256": H, "md5": H, "md5-first-mib": H } ],
//               "description": S, "dir": D, "unpack": "tar.gz" | "none", "top_folder": T,
//               "expect": [PATH, ...], "dataset": S } }
// An entry naming a built-in data set replaces the keys it gives and keeps the others; a new
// name needs base(s) and files. Unknown keys, malformed digests and files without a checksum are
// errors naming the file and the key.
std::vector<DataSource> apply_catalog_file(std::vector<DataSource> catalog,
                                           const std::string& path);

// The catalog in effect: the built-in one, with the file named by the environment variable
// CEDAR_DATA_CATALOG (when set and not empty) applied over it.
std::vector<DataSource> data_catalog();

// The entry called `name`; throws std::invalid_argument listing the known names otherwise.
const DataSource& find_data_source(const std::vector<DataSource>& catalog, const std::string& name);

}  // namespace cedar
