// IDX reader for MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/). Each file is a
// big-endian header followed by unsigned bytes: images 0x00000803, count, rows, cols; labels
// 0x00000801, count. Files may be gzipped (detected by the gzip magic 1f 8b) or raw; either way
// no more is read than one byte past what the header declares, and with a limit no more is
// inflated than the kept images (the length of the rest is checked from the gzip trailer).
#include <zlib.h>

#include <algorithm>
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
  // Reads and drops up to `n` more bytes; returns how many there were.
  uint64_t skip(uint64_t n) {
    std::vector<uint8_t> chunk;
    uint64_t skipped = 0;
    while (skipped < n) {
      chunk.clear();
      read(chunk, std::min<uint64_t>(n - skipped, 1 << 20));
      if (chunk.empty()) break;
      skipped += chunk.size();
    }
    return skipped;
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

// An IDX file's header, read and checked: the magic, then `dims` sizes, none of them zero, whose
// product (the payload length) fits in 64 bits. The reader and the probe share it.
struct IdxHeader {
  std::vector<int64_t> sizes;
  uint64_t payload = 0;  // bytes after the header
  size_t bytes = 0;      // the header's own length
};

IdxHeader read_header(ContentReader& in, std::vector<uint8_t>& d, const std::string& path,
                      uint32_t magic, int dims, const char* what) {
  IdxHeader h;
  h.bytes = 4 * static_cast<size_t>(1 + dims);
  in.read(d, h.bytes);
  if (d.size() < h.bytes) {
    throw DataError("IDX: " + path + " is truncated: " + std::to_string(d.size()) +
                    " bytes, shorter than the " + std::to_string(h.bytes) + "-byte " + what +
                    " header");
  }
  if (be32(d, 0) != magic) {
    throw DataError("IDX: " + path + " has magic " + hex32(be32(d, 0)) + ", expected " +
                    hex32(magic) + " (IDX " + what + " file)");
  }
  h.payload = 1;
  bool overflow = false;
  for (int i = 0; i < dims; ++i) {
    h.sizes.push_back(be32(d, 4 * static_cast<size_t>(1 + i)));
    // Three 32-bit sizes can multiply past 2^64 and wrap to the real payload length.
    overflow = overflow ||
               __builtin_mul_overflow(h.payload, static_cast<uint64_t>(h.sizes.back()), &h.payload);
  }
  if (overflow) {
    throw DataError("IDX: " + path + " has an impossible header: the " + what + " sizes " +
                    join_sizes(h.sizes) + " multiply to more than 2^64 bytes");
  }
  for (int i = 0; i < dims; ++i) {
    if (h.sizes[static_cast<size_t>(i)] == 0) {
      throw DataError("IDX: " + path + ": the " + what + " header sizes " + join_sizes(h.sizes) +
                      " include a zero, so the file holds no " + what + " data");
    }
  }
  return h;
}

std::string payload_mismatch(const std::string& path, const IdxHeader& h, const char* what,
                             const std::string& found) {
  return "IDX: " + path + " has trailing data: expected " + std::to_string(h.payload) + " " + what +
         " bytes after the header, found " + found;
}

std::string payload_short(const std::string& path, const IdxHeader& h, const char* what,
                          uint64_t have) {
  return "IDX: " + path + " is truncated: expected " + std::to_string(h.payload) + " " + what +
         " bytes after the header, found " + std::to_string(have);
}

// Checks that the payload after an IDX header is exactly `h.payload` bytes long, once the first
// `consumed` of them have been read: a raw file's length is its size; a gzip stream states its
// inflated length (modulo 2^32) in its last four bytes (ISIZE, RFC 1952), which a truncated or
// padded file gets wrong. Only when that disagrees is the rest of the stream inflated (and
// dropped) to tell whether it is short or too long (a stream of several gzip members states the
// last one's length alone).
void check_payload_length(ContentReader& in, const std::string& path, const IdxHeader& h,
                          const char* what, uint64_t consumed) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw DataError("IDX: cannot read " + path + ": " + ec.message());
  if (in.raw()) {
    const uint64_t have = size - h.bytes;
    if (have < h.payload) throw DataError(payload_short(path, h, what, have));
    if (have > h.payload) throw DataError(payload_mismatch(path, h, what, std::to_string(have)));
    return;
  }
  constexpr uint64_t kGzipFraming = 18;  // 10-byte header, 8-byte trailer
  uint8_t tail[4] = {0, 0, 0, 0};
  std::ifstream file(path, std::ios::binary);
  if (size >= kGzipFraming) {
    file.seekg(static_cast<std::streamoff>(size - 4));
    file.read(reinterpret_cast<char*>(tail), 4);
  }
  if (size < kGzipFraming || file.gcount() != 4)
    throw DataError("IDX: " + path + " is truncated: " + std::to_string(size) +
                    " bytes cannot hold a gzip stream and its trailer");
  const uint32_t isize = uint32_t{tail[0]} | (uint32_t{tail[1]} << 8) | (uint32_t{tail[2]} << 16) |
                         (uint32_t{tail[3]} << 24);
  const auto expected = static_cast<uint32_t>(h.bytes + h.payload);  // modulo 2^32, as ISIZE
  if (isize == expected) return;
  const uint64_t have = consumed + in.skip(h.payload + 1 - consumed);
  if (have < h.payload) throw DataError(payload_short(path, h, what, have));
  if (have > h.payload) throw DataError(payload_mismatch(path, h, what, "more"));
}

// An IDX file read and checked: the header (magic, then `dims` sizes) first, then the payload,
// which must be exactly the product of the sizes. `items` > 0 below the first size asks for that
// many items only: their bytes are read (inflated) and the rest of the file is checked for its
// length as the probe does, never inflated when the gzip trailer states the right length, so a
// run on a subset does not decode the whole set. Otherwise reading stops one byte past the
// product, so a file longer than its header says (a gzip stream inflating to gigabytes) is
// rejected without reading the rest. Returns the header and the payload read; `sizes` gets the
// header's sizes.
std::vector<uint8_t> read_checked(const std::string& path, uint32_t magic, int dims,
                                  const char* what, std::vector<int64_t>& sizes, int64_t items) {
  ContentReader in(path);
  std::vector<uint8_t> d;
  const IdxHeader h = read_header(in, d, path, magic, dims, what);
  sizes = h.sizes;
  if (items > 0 && items < h.sizes[0]) {
    const uint64_t keep =
        h.payload / static_cast<uint64_t>(h.sizes[0]) * static_cast<uint64_t>(items);
    in.read(d, keep);
    const uint64_t have = d.size() - h.bytes;
    if (have < keep) throw DataError(payload_short(path, h, what, have));
    check_payload_length(in, path, h, what, keep);
    return d;
  }
  in.read(d, h.payload + 1);
  const uint64_t have = d.size() - h.bytes;
  if (have < h.payload) throw DataError(payload_short(path, h, what, have));
  if (have > h.payload) {
    // A raw file's length is known without reading it; an inflated stream's is not.
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    throw DataError(
        payload_mismatch(path, h, what, in.raw() && !ec ? std::to_string(size - h.bytes) : "more"));
  }
  return d;
}

// The header of an IDX file and its length (check_payload_length), without reading the payload.
// Appends a problem naming the file when there is one; returns whether the file is fit to read.
bool probe_file(const std::string& path, uint32_t magic, int dims, const char* what,
                std::vector<int64_t>& sizes, std::vector<std::string>& problems) {
  try {
    ContentReader in(path);
    std::vector<uint8_t> d;
    const IdxHeader h = read_header(in, d, path, magic, dims, what);
    sizes = h.sizes;
    check_payload_length(in, path, h, what, 0);
    return true;
  } catch (const DataError& e) {
    problems.push_back(e.what());
    return false;
  }
}

// root/<prefix>-<kind>-ubyte, else the gzipped form.
std::string idx_file(const std::string& root, const std::string& prefix, const std::string& kind) {
  std::error_code ec;
  const fs::path raw = fs::path(root) / (prefix + "-" + kind + "-ubyte");
  fs::path gz = raw;
  gz += ".gz";
  if (fs::is_regular_file(raw, ec)) return raw.string();
  if (fs::is_regular_file(gz, ec)) return gz.string();
  throw DataError("IDX: missing file " + raw.string() + "[.gz]");
}

}  // namespace

ImageSet read_idx(const std::string& images_path, const std::string& labels_path, int64_t limit) {
  if (limit < 0) throw std::invalid_argument("read_idx: limit must be >= 0");
  std::vector<int64_t> dims, label_dims;
  const std::vector<uint8_t> images =
      read_checked(images_path, kImagesMagic, 3, "image", dims, limit);
  const std::vector<uint8_t> labels =
      read_checked(labels_path, kLabelsMagic, 1, "label", label_dims, limit);
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
  const std::string images = idx_file(root, prefix, "images-idx3");
  const std::string labels = idx_file(root, prefix, "labels-idx1");
  ImageSet set = read_idx(images, labels, limit);
  fs::path dir(root);
  if (!dir.has_filename()) dir = dir.parent_path();  // "root/" names the same folder
  set.name = dir.filename().string() + (train ? "/train" : "/test");
  return set;
}

ProbeResult probe_idx(const std::string& images_path, const std::string& labels_path,
                      int64_t limit) {
  if (limit < 0) throw std::invalid_argument("probe_idx: limit must be >= 0");
  ProbeResult probe;
  std::vector<int64_t> dims, label_dims;
  const bool images = probe_file(images_path, kImagesMagic, 3, "image", dims, probe.problems);
  const bool labels = probe_file(labels_path, kLabelsMagic, 1, "label", label_dims, probe.problems);
  if (!images || !labels) return probe;
  if (label_dims[0] != dims[0]) {
    probe.problems.push_back("IDX: count mismatch: " + images_path + " holds " +
                             std::to_string(dims[0]) + " images but " + labels_path + " holds " +
                             std::to_string(label_dims[0]) + " labels");
    return probe;
  }
  probe.shape = {
      limit > 0 && limit < dims[0] ? limit : dims[0], 1, dims[1], dims[2], kMnistClasses, {}};
  return probe;
}

ProbeResult probe_mnist_dir(const std::string& root, bool train, int64_t limit) {
  ProbeResult probe;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    probe.problems.push_back("IDX: missing dataset folder " + root);
    return probe;
  }
  const std::string prefix = train ? "train" : "t10k";
  std::string files[2];
  const char* kinds[2] = {"images-idx3", "labels-idx1"};
  for (int i = 0; i < 2; ++i) {
    try {
      files[i] = idx_file(root, prefix, kinds[i]);
    } catch (const DataError& e) {
      probe.problems.push_back(e.what());
    }
  }
  if (!probe.problems.empty()) return probe;
  return probe_idx(files[0], files[1], limit);
}

}  // namespace cedar
