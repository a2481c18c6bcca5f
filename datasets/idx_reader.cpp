// IDX reader for MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/). Each file is a
// big-endian header followed by unsigned bytes: images 0x00000803, count, rows, cols; labels
// 0x00000801, count. Files may be gzipped (detected by the gzip magic 1f 8b) or raw; either way
// no more is read than one byte past what the header declares.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/readers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr int64_t kMnistClasses = 10;

std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out += digits[(v >> shift) & 0xf];
  return out;
}

// A file's content in order, inflated when it is gzipped (zlib reads other files as they are).
// Read as far as asked only: a header's sizes decide how much more is read, never the stream.
class ContentReader {
 public:
  explicit ContentReader(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw DataError("IDX: missing file " + path);
    gz_ = gzopen(path.c_str(), "rb");
    if (gz_ == nullptr) throw DataError("IDX: cannot open " + path);
    gzbuffer(gz_, 1 << 20);
  }
  ~ContentReader() { gzclose(gz_); }
  ContentReader(const ContentReader&) = delete;
  ContentReader& operator=(const ContentReader&) = delete;

  // Appends up to `n` more bytes to `out` (fewer at the end of the content). The buffer grows
  // with the bytes that arrive, not with `n`, which may come from a hostile header.
  void read(std::vector<uint8_t>& out, uint64_t n) {
    constexpr uint64_t kChunk = 1 << 22;
    while (n > 0) {
      const size_t used = out.size();
      const auto want = static_cast<unsigned>(std::min(n, kChunk));
      out.resize(used + want);
      const int got = gzread(gz_, out.data() + used, want);
      if (got < 0) {
        int code = 0;
        throw DataError("IDX: corrupt gzip data in " + path_ + ": " + gzerror(gz_, &code));
      }
      out.resize(used + static_cast<size_t>(got));
      if (got == 0) return;
      n -= static_cast<uint64_t>(got);
    }
  }
  // Whether the file is read as it is (not gzipped); valid after the first read.
  bool raw() const { return gzdirect(gz_) == 1; }

 private:
  std::string path_;
  gzFile gz_ = nullptr;
};

uint32_t be32(const std::vector<uint8_t>& d, size_t at) {
  return (uint32_t{d[at]} << 24) | (uint32_t{d[at + 1]} << 16) | (uint32_t{d[at + 2]} << 8) |
         uint32_t{d[at + 3]};
}

std::string join_sizes(const std::vector<int64_t>& sizes) {
  std::string out;
  for (int64_t v : sizes) out += (out.empty() ? "" : " x ") + std::to_string(v);
  return out;
}

// An IDX file read and checked: the header (magic, then `dims` sizes) first, then the payload,
// which must be exactly the product of the sizes. Reading stops one byte past that product, so
// a file longer than its header says (a gzip stream inflating to gigabytes) is rejected without
// reading the rest. Returns the whole file; `sizes` gets the header's sizes.
std::vector<uint8_t> read_checked(const std::string& path, uint32_t magic, int dims,
                                  const char* what, std::vector<int64_t>& sizes) {
  ContentReader in(path);
  std::vector<uint8_t> d;
  const size_t header = 4 * static_cast<size_t>(1 + dims);
  in.read(d, header);
  if (d.size() < header) {
    throw DataError("IDX: " + path + " is truncated: " + std::to_string(d.size()) +
                    " bytes, shorter than the " + std::to_string(header) + "-byte " + what +
                    " header");
  }
  if (be32(d, 0) != magic) {
    throw DataError("IDX: " + path + " has magic " + hex32(be32(d, 0)) + ", expected " +
                    hex32(magic) + " (IDX " + what + " file)");
  }
  sizes.clear();
  uint64_t payload = 1;
  bool overflow = false;
  for (int i = 0; i < dims; ++i) {
    sizes.push_back(be32(d, 4 * static_cast<size_t>(1 + i)));
    // Three 32-bit sizes can multiply past 2^64 and wrap to the real payload length.
    overflow =
        overflow || __builtin_mul_overflow(payload, static_cast<uint64_t>(sizes.back()), &payload);
  }
  if (overflow) {
    throw DataError("IDX: " + path + " has an impossible header: the " + what + " sizes " +
                    join_sizes(sizes) + " multiply to more than 2^64 bytes");
  }
  for (int i = 0; i < dims; ++i) {
    if (sizes[static_cast<size_t>(i)] == 0) {
      throw DataError("IDX: " + path + ": the " + what + " header sizes " + join_sizes(sizes) +
                      " include a zero, so the file holds no " + what + " data");
    }
  }
  in.read(d, payload + 1);
  const uint64_t have = d.size() - header;
  if (have < payload) {
    throw DataError("IDX: " + path + " is truncated: expected " + std::to_string(payload) + " " +
                    what + " bytes after the header, found " + std::to_string(have));
  }
  if (have > payload) {
    // A raw file's length is known without reading it; an inflated stream's is not.
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    const std::string found = in.raw() && !ec ? std::to_string(size - header) : "more";
    throw DataError("IDX: " + path + " has trailing data: expected " + std::to_string(payload) +
                    " " + what + " bytes after the header, found " + found);
  }
  return d;
}

}  // namespace

ImageSet read_idx(const std::string& images_path, const std::string& labels_path, int64_t limit) {
  if (limit < 0) throw std::invalid_argument("read_idx: limit must be >= 0");
  std::vector<int64_t> dims, label_dims;
  const std::vector<uint8_t> images = read_checked(images_path, kImagesMagic, 3, "image", dims);
  const std::vector<uint8_t> labels =
      read_checked(labels_path, kLabelsMagic, 1, "label", label_dims);
  const int64_t label_count = label_dims[0];
  if (label_count != dims[0]) {
    throw DataError("IDX: count mismatch: " + images_path + " holds " + std::to_string(dims[0]) +
                    " images but " + labels_path + " holds " + std::to_string(label_count) +
                    " labels");
  }

  ImageSet set;
  set.name = fs::path(images_path).filename().string();
  set.count = limit > 0 && limit < dims[0] ? limit : dims[0];
  set.channels = 1;
  set.height = dims[1];
  set.width = dims[2];
  set.num_classes = kMnistClasses;
  const size_t pixel_bytes = static_cast<size_t>(set.count * set.image_bytes());
  set.pixels.assign(images.begin() + 16, images.begin() + 16 + static_cast<ptrdiff_t>(pixel_bytes));
  set.labels.resize(static_cast<size_t>(set.count));
  for (int64_t i = 0; i < set.count; ++i) {
    const int64_t label = labels[8 + static_cast<size_t>(i)];
    if (label >= kMnistClasses) {
      throw DataError("IDX: " + labels_path + " label " + std::to_string(i) + " is " +
                      std::to_string(label) + ", expected < " + std::to_string(kMnistClasses));
    }
    set.labels[static_cast<size_t>(i)] = label;
  }
  return set;
}

ImageSet read_mnist_dir(const std::string& root, bool train, int64_t limit) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw DataError("IDX: missing dataset folder " + root);
  const std::string prefix = train ? "train" : "t10k";
  // root/<prefix>-<kind>-ubyte, else the gzipped form.
  auto find = [&](const std::string& kind) {
    const fs::path raw = fs::path(root) / (prefix + "-" + kind + "-ubyte");
    fs::path gz = raw;
    gz += ".gz";
    if (fs::is_regular_file(raw, ec)) return raw.string();
    if (fs::is_regular_file(gz, ec)) return gz.string();
    throw DataError("IDX: missing file " + raw.string() + "[.gz]");
  };
  const std::string images = find("images-idx3");
  const std::string labels = find("labels-idx1");
  ImageSet set = read_idx(images, labels, limit);
  fs::path dir(root);
  if (!dir.has_filename()) dir = dir.parent_path();  // "root/" names the same folder
  set.name = dir.filename().string() + (train ? "/train" : "/test");
  return set;
}

}  // namespace cedar
