// ImageFolder reader for ImageNet subsets: root/<split>/<wnid>/*.JPEG. Classes and files are taken
// in sorted order; each JPEG is decoded with TurboJPEG (using its DCT scaling to the smallest
// size still at least image_size on the shorter side), resized so the shorter side is image_size
// with an antialiased bilinear (triangle) filter, centre-cropped and stored channel-planar.
// Memory stays bounded for hostile files: a header whose frame exceeds kMaxSourcePixels (libjpeg
// buffers a progressive image's coefficients whole before scaling it) or whose decoded size
// exceeds kMaxDecodedPixels is rejected before decoding, and only the source rows the centre crop
// reads are resized (a 1 x 65000 image scaled to a 1024 shorter side is virtually 1024 x 66.5
// million pixels). index_image_folder keeps the listing instead and decodes an image the same way
// when it is read.
#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "datasets/image_resize.h"
#include "datasets/readers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

bool is_jpeg_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpeg" || ext == ".jpg";
}

std::vector<fs::path> sorted_entries(const fs::path& dir, bool want_dirs) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw DataError("ImageFolder: cannot list " + dir.string() + ": " + ec.message());
  for (const auto& entry : it) {
    if (want_dirs ? entry.is_directory(ec) : (entry.is_regular_file(ec) && is_jpeg_name(entry))) {
      out.push_back(entry.path());
    } else if (!want_dirs && is_jpeg_name(entry) && !entry.is_directory(ec)) {
      // A JPEG name that is no readable file (a dangling link, a device) would silently shrink
      // the class; name it instead.
      throw DataError("ImageFolder: " + entry.path().string() + " is not a readable file");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (!in || ec) throw DataError("ImageFolder: cannot read " + file.string());
  std::vector<uint8_t> data(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (in.gcount() != static_cast<std::streamsize>(data.size()))
    throw DataError("ImageFolder: short read from " + file.string());
  return data;
}

// 2^26 pixels (192 MiB as RGB): far above any real photograph after DCT scaling (a 65535 x 65535
// JPEG decodes to 8192 x 8192 at 1/8), far below what a crafted header can ask for.
constexpr int64_t kMaxDecodedPixels = int64_t{1} << 26;
// 8192 x 8192; ImageNet's largest images have about 12 million.
constexpr int64_t kMaxSourcePixels = int64_t{1} << 26;

// One TurboJPEG decompressor, reused for every file.
class JpegDecoder {
 public:
  JpegDecoder() : handle_(tjInitDecompress()) {
    if (handle_ == nullptr) throw DataError("ImageFolder: cannot initialise TurboJPEG");
  }
  ~JpegDecoder() { tjDestroy(handle_); }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // What decoding `jpeg` would give, from its header alone: the frame, checked, and the smallest
  // DCT scale whose shorter side is still >= min_side. The reader and the probe share it.
  struct Frame {
    int width = 0;  // at the chosen scale
    int height = 0;
    bool cmyk = false;
  };
  Frame frame(const std::vector<uint8_t>& jpeg, const fs::path& file, int min_side) {
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    if (tjDecompressHeader3(handle_, jpeg.data(), static_cast<unsigned long>(jpeg.size()), &w, &h,
                            &subsamp, &colorspace) != 0)
      fail(file, "not a readable JPEG");
    // A stream with no frame (e.g. start and end markers only) passes the header call as 0 x 0.
    if (w <= 0 || h <= 0) fail(file, "not a readable JPEG: no image frame");
    if (int64_t{w} * h > kMaxSourcePixels)
      throw DataError("ImageFolder: " + file.string() + ": a frame of " + std::to_string(w) +
                      " x " + std::to_string(h) + " pixels, more than the " +
                      std::to_string(kMaxSourcePixels) +
                      " pixels allowed (decoding buffers a progressive JPEG whole)");
    tjscalingfactor best{1, 1};
    int count = 0;
    const tjscalingfactor* factors = tjGetScalingFactors(&count);
    for (int i = 0; factors != nullptr && i < count; ++i) {
      const tjscalingfactor f = factors[i];
      if (f.num > f.denom) continue;  // never upscale in the decoder
      if (std::min(TJSCALED(w, f), TJSCALED(h, f)) < min_side) continue;
      if (TJSCALED(w, f) < TJSCALED(w, best)) best = f;
    }
    Frame out{TJSCALED(w, best), TJSCALED(h, best),
              colorspace == TJCS_CMYK || colorspace == TJCS_YCCK};
    const int64_t pixels = int64_t{out.width} * out.height;
    if (pixels > kMaxDecodedPixels)
      throw DataError("ImageFolder: " + file.string() + ": " + std::to_string(w) + " x " +
                      std::to_string(h) + " pixels decode to " + std::to_string(pixels) +
                      " pixels for a shorter side of at least " + std::to_string(min_side) +
                      ", more than the " + std::to_string(kMaxDecodedPixels) + " pixels allowed");
    return out;
  }

  // Decodes to RGB at the smallest DCT scale whose shorter side is still >= min_side.
  Rgb decode(const fs::path& file, int min_side) {
    std::vector<uint8_t> jpeg = read_bytes(file);
    const auto size = static_cast<unsigned long>(jpeg.size());
    const Frame f = frame(jpeg, file, min_side);
    const bool cmyk = f.cmyk;
    Rgb out;
    out.width = f.width;
    out.height = f.height;
    const int channels = cmyk ? 4 : 3;
    std::vector<uint8_t> buffer(static_cast<size_t>(out.width) * out.height * channels);
    if (tjDecompress2(handle_, jpeg.data(), size, buffer.data(), out.width, 0, out.height,
                      cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0) {
      // Warnings (e.g. extraneous bytes, common in ImageNet) still give a full image; a
      // truncated file does not, so that warning is an error like every fatal one.
      const std::string message = tjGetErrorStr2(handle_);
      if (tjGetErrorCode(handle_) != TJERR_WARNING ||
          message.find("Premature end") != std::string::npos)
        fail(file, "corrupt JPEG data");
    }
    if (!cmyk) {
      out.pixels = std::move(buffer);
      return out;
    }
    // Adobe CMYK JPEGs store inverted inks: R = C*K/255 etc. (approximate, no colour management).
    out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
    for (size_t i = 0, n = out.pixels.size() / 3; i < n; ++i) {
      const unsigned k = buffer[4 * i + 3];
      for (size_t c = 0; c < 3; ++c)
        out.pixels[3 * i + c] = static_cast<uint8_t>((buffer[4 * i + c] * k + 127) / 255);
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const fs::path& file, const char* what) {
    throw DataError("ImageFolder: " + file.string() + ": " + what +
                    " (TurboJPEG: " + tjGetErrorStr2(handle_) + ")");
  }

  tjhandle handle_;
};

// The class folders and files a split contributes, in sorted order, checked before any decoding
// (shared by the reader and the probe).
struct Listing {
  std::vector<fs::path> classes;
  std::vector<std::vector<fs::path>> files;
  int64_t total = 0;
};

Listing list_split(const std::string& root, const std::string& split, int64_t num_classes,
                   int64_t per_class, int64_t image_size) {
  if (image_size <= 0 || image_size > 4096)
    throw std::invalid_argument("read_image_folder: image_size must be in [1, 4096], got " +
                                std::to_string(image_size));
  if (num_classes < 0 || per_class < 0)
    throw std::invalid_argument("read_image_folder: num_classes and per_class must be >= 0");
  const fs::path dir = fs::path(root) / split;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw DataError("ImageFolder: missing split folder " + dir.string() +
                    " (expected <root>/<split>/<wnid>/*.JPEG)");
  std::vector<fs::path> classes = sorted_entries(dir, true);
  if (classes.empty()) throw DataError("ImageFolder: no class folders in " + dir.string());
  if (num_classes > static_cast<int64_t>(classes.size()))
    throw DataError("ImageFolder: " + dir.string() + " has " + std::to_string(classes.size()) +
                    " class folders, fewer than the " + std::to_string(num_classes) + " asked for");
  if (num_classes > 0) classes.resize(static_cast<size_t>(num_classes));

  // List every file first so an empty class fails fast, before any decoding.
  std::vector<std::vector<fs::path>> files;
  int64_t total = 0;
  for (const auto& cls : classes) {
    std::vector<fs::path> list = sorted_entries(cls, false);
    if (list.empty())
      throw DataError("ImageFolder: class folder " + cls.string() + " holds no .JPEG/.jpg files");
    if (per_class > 0 && static_cast<int64_t>(list.size()) > per_class)
      list.resize(static_cast<size_t>(per_class));
    total += static_cast<int64_t>(list.size());
    files.push_back(std::move(list));
  }

  return {std::move(classes), std::move(files), total};
}

// A probe lists this many unreadable files of a split by name, then counts the rest.
constexpr size_t kListedBadFiles = 5;

// The set's shape, labels and class names from its listing; no pixels yet.
ImageSet unread_set(const Listing& listing, const std::string& split, int64_t image_size) {
  ImageSet set;
  set.name = "image_folder/" + split;
  set.count = listing.total;
  set.channels = 3;
  set.height = image_size;
  set.width = image_size;
  set.num_classes = static_cast<int64_t>(listing.classes.size());
  set.labels.reserve(static_cast<size_t>(listing.total));
  for (size_t c = 0; c < listing.classes.size(); ++c) {
    set.class_names.push_back(listing.classes[c].filename().string());
    set.labels.insert(set.labels.end(), listing.files[c].size(), static_cast<int64_t>(c));
  }
  return set;
}

// A lazy set's images: each decoded when read, on the reading thread's own decompressor.
class ImageFolderFiles : public ImageFiles {
 public:
  ImageFolderFiles(std::vector<fs::path> files, int side) : files_(std::move(files)), side_(side) {}

  void decode(int64_t i, uint8_t* dst) const override {
    if (i < 0 || i >= static_cast<int64_t>(files_.size()))
      throw std::out_of_range("ImageFolder: image " + std::to_string(i) + " of " +
                              std::to_string(files_.size()));
    thread_local JpegDecoder decoder;
    resize_crop(decoder.decode(files_[static_cast<size_t>(i)], side_), side_, dst);
  }

 private:
  std::vector<fs::path> files_;
  int side_;
};

}  // namespace

ImageSet read_image_folder(const std::string& root, const std::string& split, int64_t num_classes,
                           int64_t per_class, int64_t image_size) {
  const Listing listing = list_split(root, split, num_classes, per_class, image_size);
  ImageSet set = unread_set(listing, split, image_size);
  set.pixels.resize(static_cast<size_t>(set.count * set.image_bytes()));
  JpegDecoder decoder;
  const int side = static_cast<int>(image_size);
  int64_t index = 0;
  for (const auto& class_files : listing.files)
    for (const auto& file : class_files)
      resize_crop(decoder.decode(file, side), side,
                  set.pixels.data() + index++ * set.image_bytes());
  return set;
}

ImageSet index_image_folder(const std::string& root, const std::string& split, int64_t num_classes,
                            int64_t per_class, int64_t image_size) {
  const Listing listing = list_split(root, split, num_classes, per_class, image_size);
  ImageSet set = unread_set(listing, split, image_size);
  std::vector<fs::path> files;
  files.reserve(static_cast<size_t>(listing.total));
  for (const auto& class_files : listing.files)
    files.insert(files.end(), class_files.begin(), class_files.end());
  set.files =
      std::make_shared<const ImageFolderFiles>(std::move(files), static_cast<int>(image_size));
  return set;
}

ProbeResult probe_image_folder(const std::string& root, const std::string& split,
                               int64_t num_classes, int64_t per_class, int64_t image_size) {
  ProbeResult probe;
  Listing listing;
  try {
    listing = list_split(root, split, num_classes, per_class, image_size);
  } catch (const DataError& e) {
    probe.problems.push_back(e.what());
    return probe;
  }
  // Every file the reader would decode: read, and its frame header checked (no pixel decoded).
  JpegDecoder decoder;
  size_t bad = 0;
  for (const auto& class_files : listing.files) {
    for (const auto& file : class_files) {
      try {
        decoder.frame(read_bytes(file), file, static_cast<int>(image_size));
      } catch (const DataError& e) {
        if (++bad <= kListedBadFiles) probe.problems.push_back(e.what());
      }
    }
  }
  if (bad > kListedBadFiles)
    probe.problems.push_back("ImageFolder: " + std::to_string(bad - kListedBadFiles) +
                             " more unreadable JPEG files under " +
                             (fs::path(root) / split).string());
  probe.shape = {
      listing.total, 3, image_size, image_size, static_cast<int64_t>(listing.classes.size()), {}};
  for (const auto& cls : listing.classes)
    probe.shape.class_names.push_back(cls.filename().string());
  return probe;
}

}  // namespace cedar
