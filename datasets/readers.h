#pragma once
// Readers for the real on-disk formats. Each throws cedar::DataError naming the file and what
// was expected when a file is missing, truncated or malformed.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/image_set.h"

namespace cedar {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// CIFAR-10 / CIFAR-100 "binary version". root holds cifar-10-batches-bin/ (data_batch_1..5.bin,
// test_batch.bin) or cifar-100-binary/ (train.bin, test.bin), or the files themselves.
// CIFAR-10 record: 1 label byte + 3072 pixel bytes (1024 R, 1024 G, 1024 B, row-major 32x32).
// CIFAR-100 record: 1 coarse label byte + 1 fine label byte + 3072 pixel bytes; the fine label is
// used. limit > 0 keeps only the first `limit` records.
ImageSet read_cifar(const std::string& root, int classes /*10 or 100*/, bool train,
                    int64_t limit = 0);

// MNIST / Fashion-MNIST IDX files (gzipped when the name ends in .gz, detected by magic too).
// images: magic 0x00000803, count, rows, cols, then bytes; labels: magic 0x00000801, count, bytes.
// limit > 0 keeps the first `limit` images: only their bytes are inflated; the rest of each file
// is checked for its length as probe_idx does (a gzip trailer that states the right length is
// trusted), so corrupt compressed data past the kept images goes unseen, as it goes unused.
ImageSet read_idx(const std::string& images_path, const std::string& labels_path,
                  int64_t limit = 0);
// Convenience: root/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
ImageSet read_mnist_dir(const std::string& root, bool train, int64_t limit = 0);

// ImageNet subset in ImageFolder layout: root/<split>/<wnid>/*.JPEG (any .jpg/.jpeg/.png-less JPEG
// file). The first `num_classes` wnids in sorted order (0 = all) and the first `per_class` files
// of each in sorted order (0 = all); decoded with TurboJPEG to RGB, the shorter side resized to
// `image_size` and centre-cropped to image_size x image_size.
ImageSet read_image_folder(const std::string& root, const std::string& split, int64_t num_classes,
                           int64_t per_class, int64_t image_size);
// The same set kept as its files (ImageSet::files, no pixels in memory): the folders are listed
// and checked as read_image_folder does, and each image is decoded, resized and cropped exactly as
// it does, bitwise, when it is read, so a subset larger than memory can be trained on. A file's
// defects (not a JPEG, corrupt data) show as a DataError naming it when its image is read.
ImageSet index_image_folder(const std::string& root, const std::string& split, int64_t num_classes,
                            int64_t per_class, int64_t image_size);

// What a reader would produce, told from listings, headers and file sizes only (no image is
// decoded), for checking a run's data before it starts. Each probe applies the same checks as its
// reader up to the pixels (missing files, record sizes, IDX magic and sizes, a gzipped file's
// length from its trailer, inflated only when that disagrees, class folders, JPEG frame headers)
// and collects every problem it finds, each naming its file, where the reader throws at the
// first. Defects only the pixels show (a label out of range, corrupt compressed data) are found by
// the reader alone.
struct ImageSetShape {
  int64_t count = 0;  // images after the limit
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t num_classes = 0;
  std::vector<std::string> class_names;  // ImageFolder: the wnids taken
};
struct ProbeResult {
  ImageSetShape shape;                // meaningful when problems is empty
  std::vector<std::string> problems;  // each a reader's DataError message
  bool ok() const { return problems.empty(); }
};
ProbeResult probe_cifar(const std::string& root, int classes, bool train, int64_t limit = 0);
ProbeResult probe_idx(const std::string& images_path, const std::string& labels_path,
                      int64_t limit = 0);
ProbeResult probe_mnist_dir(const std::string& root, bool train, int64_t limit = 0);
ProbeResult probe_image_folder(const std::string& root, const std::string& split,
                               int64_t num_classes, int64_t per_class, int64_t image_size);

// Deterministic synthetic set: class-dependent patterns plus seeded noise, learnable.
ImageSet make_synthetic(int64_t count, int64_t channels, int64_t size, int64_t num_classes,
                        uint64_t seed);
// Images [first, count) of make_synthetic(count, ...), bitwise, without computing the images
// before `first` (their noise draws are skipped on the generator).
ImageSet make_synthetic_range(int64_t first, int64_t count, int64_t channels, int64_t size,
                              int64_t num_classes, uint64_t seed);

}  // namespace cedar
