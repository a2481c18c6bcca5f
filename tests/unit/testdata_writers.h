#pragma once
// Writers of small test files in exactly the real on-disk formats: CIFAR-10 / CIFAR-100 binary
// batches, IDX images and labels (raw or gzipped), and ImageFolder trees of real JPEGs.
// No LibTorch here, so both the readers test and the loader test can use them.
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cedar::testdata {

// A fresh, uniquely named empty folder under the system temp folder, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

void write_bytes(const std::filesystem::path& file, const std::vector<uint8_t>& bytes);
// The same bytes as a gzip stream (what `gzip` writes).
std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes);

// CIFAR-10 batch: per image <label><3072 pixel bytes>. pixels holds 3072 channel-planar bytes per
// image (1024 R, 1024 G, 1024 B), i.e. the ImageSet layout.
void write_cifar10_batch(const std::filesystem::path& file, const std::vector<uint8_t>& pixels,
                         const std::vector<uint8_t>& labels);
// CIFAR-100 file: per image <coarse><fine><3072 pixel bytes>.
void write_cifar100_file(const std::filesystem::path& file, const std::vector<uint8_t>& pixels,
                         const std::vector<uint8_t>& coarse, const std::vector<uint8_t>& fine);

// IDX images: magic (default 0x00000803), count, rows, cols (big-endian) then the pixel bytes.
// `count` is written as given, so tests can make a header disagree with the payload.
void write_idx_images(const std::filesystem::path& file, const std::vector<uint8_t>& pixels,
                      uint32_t count, uint32_t rows, uint32_t cols, bool gzip,
                      uint32_t magic = 0x00000803);
// IDX labels: magic (default 0x00000801), count, then one byte per label.
void write_idx_labels(const std::filesystem::path& file, const std::vector<uint8_t>& labels,
                      bool gzip, uint32_t magic = 0x00000801);

// Baseline JPEG of an interleaved RGB image (TurboJPEG tjCompress2, 4:4:4 chroma).
std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int width, int height,
                                 int quality = 95);
void write_jpeg(const std::filesystem::path& file, const std::vector<uint8_t>& rgb, int width,
                int height, int quality = 95);
void write_solid_jpeg(const std::filesystem::path& file, int width, int height,
                      std::array<uint8_t, 3> colour);

// One class of an ImageFolder tree: its folder name and one solid colour per image; image k is
// written as <wnid>/<wnid>_<k>.JPEG (zero-padded so name order is creation order).
struct FolderClass {
  std::string wnid;
  std::vector<std::array<uint8_t, 3>> colours;
};
// Writes root/<split>/<wnid>/... for every class, each image width x height.
void write_image_folder(const std::filesystem::path& root, const std::string& split,
                        const std::vector<FolderClass>& classes, int width, int height);

}  // namespace cedar::testdata
