#include "tests/unit/testdata_writers.h"

#include <ftw.h>
#include <turbojpeg.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace cedar::testdata {
namespace fs = std::filesystem;

TempDir::TempDir(const std::string& tag) {
  static std::atomic<uint64_t> counter{0};
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const fs::path base = fs::temp_directory_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path candidate =
        base / ("cedar_" + tag + "_" + std::to_string(::getpid()) + "_" +
                std::to_string(counter++) + "_" + std::to_string(stamp % 1000000007));
    if (fs::create_directories(candidate)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("TempDir: cannot create a unique folder under " + base.string());
}

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }
}  // namespace

// Not std::filesystem::remove_all: in executables linked with the LibTorch 2.x wheel it binds to
// libtorch.so's copy, built against a newer libstdc++ (it needs
// recursive_directory_iterator::__erase, absent from Debian 12's GCC 12), and jumps to null.
TempDir::~TempDir() {
  if (!path_.empty()) nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void write_bytes(const fs::path& file, const std::vector<uint8_t>& bytes) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer rather than a zlib one.
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip_bytes: deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(bytes.size())) + 64);
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("gzip_bytes: deflate failed");
  out.resize(zs.total_out);
  return out;
}

namespace {

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

void write_maybe_gzip(const fs::path& file, const std::vector<uint8_t>& bytes, bool gzip) {
  write_bytes(file, gzip ? gzip_bytes(bytes) : bytes);
}

constexpr size_t kCifarPixels = 3072;

}  // namespace

void write_cifar10_batch(const fs::path& file, const std::vector<uint8_t>& pixels,
                         const std::vector<uint8_t>& labels) {
  if (pixels.size() != labels.size() * kCifarPixels)
    throw std::invalid_argument("write_cifar10_batch: need 3072 pixel bytes per label");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < labels.size(); ++i) {
    out.push_back(labels[i]);
    out.insert(out.end(), pixels.begin() + static_cast<ptrdiff_t>(i * kCifarPixels),
               pixels.begin() + static_cast<ptrdiff_t>((i + 1) * kCifarPixels));
  }
  write_bytes(file, out);
}

void write_cifar100_file(const fs::path& file, const std::vector<uint8_t>& pixels,
                         const std::vector<uint8_t>& coarse, const std::vector<uint8_t>& fine) {
  if (pixels.size() != fine.size() * kCifarPixels || coarse.size() != fine.size())
    throw std::invalid_argument(
        "write_cifar100_file: need 3072 pixel bytes and 2 labels per image");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < fine.size(); ++i) {
    out.push_back(coarse[i]);
    out.push_back(fine[i]);
    out.insert(out.end(), pixels.begin() + static_cast<ptrdiff_t>(i * kCifarPixels),
               pixels.begin() + static_cast<ptrdiff_t>((i + 1) * kCifarPixels));
  }
  write_bytes(file, out);
}

void write_idx_images(const fs::path& file, const std::vector<uint8_t>& pixels, uint32_t count,
                      uint32_t rows, uint32_t cols, bool gzip, uint32_t magic) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  put_be32(out, count);
  put_be32(out, rows);
  put_be32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  write_maybe_gzip(file, out, gzip);
}

void write_idx_labels(const fs::path& file, const std::vector<uint8_t>& labels, bool gzip,
                      uint32_t magic) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  put_be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  write_maybe_gzip(file, out, gzip);
}

std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int width, int height,
                                 int quality) {
  if (rgb.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 3)
    throw std::invalid_argument("encode_jpeg: need width * height * 3 RGB bytes");
  tjhandle handle = tjInitCompress();
  if (handle == nullptr) throw std::runtime_error("encode_jpeg: tjInitCompress failed");
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, rgb.data(), width, 0, height, TJPF_RGB, &jpeg, &size,
                             TJSAMP_444, quality, 0);
  if (rc != 0) {
    const std::string message = tjGetErrorStr2(handle);
    tjDestroy(handle);
    throw std::runtime_error("encode_jpeg: " + message);
  }
  std::vector<uint8_t> out(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);
  return out;
}

void write_jpeg(const fs::path& file, const std::vector<uint8_t>& rgb, int width, int height,
                int quality) {
  write_bytes(file, encode_jpeg(rgb, width, height, quality));
}

void write_solid_jpeg(const fs::path& file, int width, int height, std::array<uint8_t, 3> colour) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = colour[i % 3];
  write_jpeg(file, rgb, width, height);
}

void write_image_folder(const fs::path& root, const std::string& split,
                        const std::vector<FolderClass>& classes, int width, int height) {
  for (const auto& cls : classes) {
    for (size_t k = 0; k < cls.colours.size(); ++k) {
      std::string index = std::to_string(k);
      index.insert(0, index.size() < 4 ? 4 - index.size() : 0, '0');
      write_solid_jpeg(root / split / cls.wnid / (cls.wnid + "_" + index + ".JPEG"), width, height,
                       cls.colours[k]);
    }
  }
}

}  // namespace cedar::testdata
