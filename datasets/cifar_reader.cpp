// CIFAR-10 / CIFAR-100 "binary version" reader (https://www.cs.toronto.edu/~kriz/cifar.html).
// CIFAR-10 record: <1 label byte><3072 pixel bytes>; CIFAR-100 record: <1 coarse label byte>
// <1 fine label byte><3072 pixel bytes>. The pixels are already channel-planar (1024 R, 1024 G,
// 1024 B, each a row-major 32x32 plane), which is the ImageSet layout, so records are copied as is.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/readers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSide = 32;
constexpr int64_t kPixelBytes = 3 * kSide * kSide;  // 3072

struct CifarLayout {
  const char* subdir;  // folder inside root that holds the files
  std::vector<std::string> train_files;
  std::vector<std::string> test_files;
  const char* names_file;  // optional label-name list, one per line
  int64_t label_bytes;     // 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine)
  int64_t num_classes;
  int64_t num_coarse;  // CIFAR-100 coarse classes (0: none)
};

CifarLayout layout_for(int classes) {
  if (classes == 10) {
    return {"cifar-10-batches-bin",
            {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
             "data_batch_5.bin"},
            {"test_batch.bin"},
            "batches.meta.txt",
            1,
            10,
            0};
  }
  if (classes == 100) {
    return {"cifar-100-binary", {"train.bin"}, {"test.bin"}, "fine_label_names.txt", 2, 100, 20};
  }
  throw std::invalid_argument("read_cifar: classes must be 10 or 100, got " +
                              std::to_string(classes));
}

// The folder holding the batch files: root/<subdir> when it exists, else root itself.
fs::path resolve_dir(const std::string& root, const CifarLayout& layout) {
  const fs::path nested = fs::path(root) / layout.subdir;
  std::error_code ec;
  if (fs::is_directory(nested, ec)) return nested;
  return fs::path(root);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Optional human-readable class names; used only when the file lists exactly num_classes names.
std::vector<std::string> read_names(const fs::path& file, int64_t num_classes) {
  std::ifstream in(file);
  std::vector<std::string> names;
  std::string line;
  while (in && std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (static_cast<int64_t>(names.size()) != num_classes) names.clear();
  return names;
}

// The number of whole records in batch file `file`; a DataError when its size is not a positive
// multiple of the record (the reader and the probe share this check).
int64_t record_count(const fs::path& file, const CifarLayout& layout) {
  const int64_t record = layout.label_bytes + kPixelBytes;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) throw DataError("CIFAR: cannot read " + file.string() + ": " + ec.message());
  const auto bytes = static_cast<int64_t>(size);
  if (bytes == 0 || bytes % record != 0) {
    throw DataError("CIFAR: " + file.string() + " is truncated or not a CIFAR-" +
                    std::to_string(layout.num_classes) + " batch: " + std::to_string(bytes) +
                    " bytes is not a positive multiple of the " + std::to_string(record) +
                    "-byte record");
  }
  return bytes / record;
}

// Every batch file of a split must be there before minutes of reading: the message names the
// missing folder, or each missing file (empty when none is).
std::string missing_files(const std::string& root, int classes, const CifarLayout& layout,
                          const fs::path& dir, const std::vector<std::string>& files) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return "CIFAR-" + std::to_string(classes) + ": missing folder " + root + " (expected " +
           layout.subdir + "/ in it, holding " + join(layout.train_files) + " and " +
           join(layout.test_files) + ")";
  std::vector<std::string> missing;
  for (const auto& name : files) {
    std::error_code ec;
    if (!fs::is_regular_file(dir / name, ec)) missing.push_back((dir / name).string());
  }
  if (missing.empty()) return "";
  return "CIFAR-" + std::to_string(classes) + ": missing file" + (missing.size() > 1 ? "s " : " ") +
         join(missing) + " (expected " + join(files) + " in " + root + " or " +
         (fs::path(root) / layout.subdir).string() + ")";
}

// Appends up to `max_records` records of `file` to `out` (max_records < 0: all of them).
void read_batch_file(const fs::path& file, const CifarLayout& layout, int64_t max_records,
                     ImageSet& out) {
  const int64_t record = layout.label_bytes + kPixelBytes;
  int64_t records = record_count(file, layout);
  if (max_records >= 0 && max_records < records) records = max_records;

  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError("CIFAR: cannot open " + file.string());
  std::vector<char> buffer(static_cast<size_t>(records * record));
  in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  if (in.gcount() != static_cast<std::streamsize>(buffer.size())) {
    throw DataError("CIFAR: short read from " + file.string() + ": expected " +
                    std::to_string(buffer.size()) + " bytes, got " + std::to_string(in.gcount()));
  }

  const size_t first = out.pixels.size();
  out.pixels.resize(first + static_cast<size_t>(records * kPixelBytes));
  for (int64_t r = 0; r < records; ++r) {
    const auto* rec = reinterpret_cast<const uint8_t*>(buffer.data() + r * record);
    const int64_t label = rec[layout.label_bytes - 1];  // the fine label for CIFAR-100
    if (label >= layout.num_classes) {
      throw DataError("CIFAR: " + file.string() + " record " + std::to_string(r) + ": label " +
                      std::to_string(label) + " out of range [0, " +
                      std::to_string(layout.num_classes) + ")");
    }
    if (layout.num_coarse > 0 && rec[0] >= layout.num_coarse) {
      throw DataError("CIFAR: " + file.string() + " record " + std::to_string(r) +
                      ": coarse label " + std::to_string(rec[0]) + " out of range [0, " +
                      std::to_string(layout.num_coarse) + ")");
    }
    out.labels.push_back(label);
    std::memcpy(out.pixels.data() + first + static_cast<size_t>(r * kPixelBytes),
                rec + layout.label_bytes, static_cast<size_t>(kPixelBytes));
  }
  out.count += records;
}

}  // namespace

ImageSet read_cifar(const std::string& root, int classes, bool train, int64_t limit) {
  const CifarLayout layout = layout_for(classes);
  if (limit < 0) throw std::invalid_argument("read_cifar: limit must be >= 0");
  const fs::path dir = resolve_dir(root, layout);
  const auto& files = train ? layout.train_files : layout.test_files;

  const std::string missing = missing_files(root, classes, layout, dir, files);
  if (!missing.empty()) throw DataError(missing);

  ImageSet set;
  set.name = "cifar" + std::to_string(classes) + (train ? "/train" : "/test");
  set.channels = 3;
  set.height = kSide;
  set.width = kSide;
  set.num_classes = layout.num_classes;
  for (const auto& name : files) {
    const int64_t remaining = limit > 0 ? limit - set.count : -1;
    if (remaining == 0) break;
    read_batch_file(dir / name, layout, remaining, set);
  }
  set.class_names = read_names(dir / layout.names_file, layout.num_classes);
  return set;
}

ProbeResult probe_cifar(const std::string& root, int classes, bool train, int64_t limit) {
  const CifarLayout layout = layout_for(classes);
  if (limit < 0) throw std::invalid_argument("probe_cifar: limit must be >= 0");
  const fs::path dir = resolve_dir(root, layout);
  const auto& files = train ? layout.train_files : layout.test_files;
  ProbeResult probe;
  probe.shape = {0, 3, kSide, kSide, layout.num_classes, {}};
  const std::string missing = missing_files(root, classes, layout, dir, files);
  if (!missing.empty()) {
    probe.problems.push_back(missing);
    return probe;
  }
  // The files read_cifar reads, in its order: it stops once `limit` records are in.
  for (const auto& name : files) {
    if (limit > 0 && probe.shape.count >= limit) break;
    try {
      probe.shape.count += record_count(dir / name, layout);
      if (!std::ifstream(dir / name, std::ios::binary))
        throw DataError("CIFAR: cannot open " + (dir / name).string());
    } catch (const DataError& e) {
      probe.problems.push_back(e.what());
    }
  }
  if (limit > 0 && probe.shape.count > limit) probe.shape.count = limit;
  return probe;
}

}  // namespace cedar
