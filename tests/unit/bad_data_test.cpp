// Hostile data files: truncated, oversized, wrong-magic and corrupted files for every reader
// (CIFAR binary, IDX raw and gzipped, JPEG in an ImageFolder tree). Each must give a DataError
// that names the file at fault and what is wrong with it, never a crash or a silent success.
// (tests/unit/readers_test.cpp checks the readers on good files and the first obvious errors.)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "datasets/readers.h"
#include "tests/unit/testdata_writers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;
using testdata::TempDir;

struct BadData {
  const char* what;
  // Writes the bad file(s) under `dir` and returns the path the message must name.
  std::function<fs::path(const fs::path& dir)> write;
  std::function<void(const fs::path& dir)> read;
  std::vector<std::string> expect;  // besides the path
};

std::vector<uint8_t> pattern(size_t n, int seed = 0) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>((i * 131 + static_cast<size_t>(seed) * 17 + 7) & 0xff);
  return v;
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- CIFAR -------------------------------------------------------------------------------------

constexpr size_t kCifarPixels = 3072;

std::vector<uint8_t> cifar10_records(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < labels.size(); ++i)
    out = cat(cat(out, {labels[i]}), pattern(kCifarPixels, static_cast<int>(i)));
  return out;
}

std::vector<uint8_t> cifar100_records(const std::vector<uint8_t>& coarse,
                                      const std::vector<uint8_t>& fine) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < fine.size(); ++i)
    out = cat(cat(out, {coarse[i], fine[i]}), pattern(kCifarPixels, static_cast<int>(i)));
  return out;
}

// A CIFAR-10 test batch with `bytes` as test_batch.bin.
std::function<fs::path(const fs::path&)> cifar10_test_file(std::vector<uint8_t> bytes) {
  return [bytes](const fs::path& dir) {
    testdata::write_bytes(dir / "test_batch.bin", bytes);
    return dir / "test_batch.bin";
  };
}

std::function<fs::path(const fs::path&)> cifar100_test_file(std::vector<uint8_t> bytes) {
  return [bytes](const fs::path& dir) {
    testdata::write_bytes(dir / "test.bin", bytes);
    return dir / "test.bin";
  };
}

void read_cifar10_test(const fs::path& dir) { read_cifar(dir.string(), 10, false); }
void read_cifar100_test(const fs::path& dir) { read_cifar(dir.string(), 100, false); }

// --- IDX ---------------------------------------------------------------------------------------

std::vector<uint8_t> be32(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

std::vector<uint8_t> idx_images(uint32_t count, uint32_t rows, uint32_t cols, size_t payload,
                                uint32_t magic = 0x00000803) {
  return cat(cat(cat(cat(be32(magic), be32(count)), be32(rows)), be32(cols)), pattern(payload));
}

std::vector<uint8_t> idx_labels(uint32_t count, size_t payload, uint32_t magic = 0x00000801) {
  std::vector<uint8_t> labels(payload);
  for (size_t i = 0; i < payload; ++i) labels[i] = static_cast<uint8_t>(i % 10);
  return cat(cat(be32(magic), be32(count)), labels);
}

// images.idx / labels.idx (".gz" when gzipped) under dir; the path returned is `blame`'s.
std::function<fs::path(const fs::path&)> idx_pair(std::vector<uint8_t> images,
                                                  std::vector<uint8_t> labels, bool images_gz,
                                                  bool labels_gz, bool blame_labels) {
  return [=](const fs::path& dir) {
    testdata::write_bytes(dir / (images_gz ? "images.idx.gz" : "images.idx"),
                          images_gz ? testdata::gzip_bytes(images) : images);
    testdata::write_bytes(dir / (labels_gz ? "labels.idx.gz" : "labels.idx"),
                          labels_gz ? testdata::gzip_bytes(labels) : labels);
    return blame_labels ? dir / (labels_gz ? "labels.idx.gz" : "labels.idx")
                        : dir / (images_gz ? "images.idx.gz" : "images.idx");
  };
}

// Raw bytes written as they are (not re-compressed) under images.idx.gz, good labels beside.
std::function<fs::path(const fs::path&)> raw_gz_images(std::vector<uint8_t> bytes) {
  return [bytes](const fs::path& dir) {
    testdata::write_bytes(dir / "images.idx.gz", bytes);
    testdata::write_bytes(dir / "labels.idx", idx_labels(3, 3));
    return dir / "images.idx.gz";
  };
}

void read_idx_in(const fs::path& dir) {
  auto pick = [&](const std::string& stem) {
    const fs::path gz = dir / (stem + ".idx.gz");
    return fs::exists(gz) ? gz.string() : (dir / (stem + ".idx")).string();
  };
  read_idx(pick("images"), pick("labels"));
}

std::vector<uint8_t> good_gz_images() { return testdata::gzip_bytes(idx_images(3, 4, 4, 48)); }

std::vector<uint8_t> flipped(std::vector<uint8_t> v, size_t from, size_t to) {
  for (size_t i = from; i < to && i < v.size(); ++i) v[i] ^= 0xa5;
  return v;
}

std::vector<uint8_t> cut(std::vector<uint8_t> v, size_t n) {
  v.resize(n);
  return v;
}

// --- ImageFolder -------------------------------------------------------------------------------

std::vector<uint8_t> good_jpeg() {
  std::vector<uint8_t> rgb(32 * 24 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 7);
  return testdata::encode_jpeg(rgb, 32, 24);
}

// train/a/ok.JPEG is good; train/b/<name> holds `bytes`.
std::function<fs::path(const fs::path&)> folder_with(const std::string& name,
                                                     std::vector<uint8_t> bytes) {
  return [=](const fs::path& dir) {
    testdata::write_bytes(dir / "train" / "a" / "ok.JPEG", good_jpeg());
    testdata::write_bytes(dir / "train" / "b" / name, bytes);
    return dir / "train" / "b" / name;
  };
}

void read_folder(const fs::path& dir) { read_image_folder(dir.string(), "train", 0, 0, 8); }

// Offset of the first byte after the first marker `code` (FF code) in a JPEG.
size_t after_marker(const std::vector<uint8_t>& jpeg, uint8_t code) {
  for (size_t i = 0; i + 1 < jpeg.size(); ++i)
    if (jpeg[i] == 0xff && jpeg[i + 1] == code) return i + 2;
  return jpeg.size();
}

// `jpeg` with the frame size in its SOF0 header replaced (the scan data stays that of the small
// image): what a file claiming to be huge looks like to the header parser.
std::vector<uint8_t> with_frame_size(std::vector<uint8_t> jpeg, uint16_t width, uint16_t height) {
  const size_t sof = after_marker(jpeg, 0xc0);  // then length (2), precision (1), height, width
  jpeg[sof + 3] = static_cast<uint8_t>(height >> 8);
  jpeg[sof + 4] = static_cast<uint8_t>(height & 0xff);
  jpeg[sof + 5] = static_cast<uint8_t>(width >> 8);
  jpeg[sof + 6] = static_cast<uint8_t>(width & 0xff);
  return jpeg;
}

std::vector<BadData> bad_files() {
  const std::vector<uint8_t> jpeg = good_jpeg();
  const size_t sof = after_marker(jpeg, 0xc0), sos = after_marker(jpeg, 0xda);
  // clang-format off
  return {
      // CIFAR binary.
      {"CIFAR-10 empty batch", cifar10_test_file({}), read_cifar10_test, {"0 bytes", "3073-byte record"}},
      {"CIFAR-10 batch one byte too long", cifar10_test_file(cat(cifar10_records({1, 2}), {0})), read_cifar10_test,
       {"6147 bytes is not a positive multiple of the 3073-byte record"}},
      {"CIFAR-10 batch half a record too long",
       cifar10_test_file(cat(cifar10_records({1, 2}), pattern(1536))), read_cifar10_test, {"truncated or not a CIFAR-10 batch"}},
      {"CIFAR-10 records read as CIFAR-100", cifar100_test_file(cifar10_records({1, 2, 3})), read_cifar100_test,
       {"not a CIFAR-100 batch", "9219 bytes", "3074-byte record"}},
      {"CIFAR-10 corrupted label in record 1", cifar10_test_file(cifar10_records({3, 200, 4})), read_cifar10_test,
       {"record 1: label 200 out of range [0, 10)"}},
      {"CIFAR-10 batch of 0xff bytes", cifar10_test_file(std::vector<uint8_t>(2 * 3073, 0xff)), read_cifar10_test,
       {"record 0: label 255"}},
      {"CIFAR-100 coarse label out of range", cifar100_test_file(cifar100_records({5, 20}, {1, 2})),
       read_cifar100_test, {"record 1: coarse label 20 out of range [0, 20)"}},
      {"CIFAR-100 fine label out of range", cifar100_test_file(cifar100_records({5}, {100})), read_cifar100_test,
       {"record 0: label 100 out of range [0, 100)"}},
      {"CIFAR-10 batch that is a folder",
       [](const fs::path& dir) {
         fs::create_directories(dir / "test_batch.bin");
         return dir / "test_batch.bin";
       },
       read_cifar10_test, {"missing file"}},
      {"CIFAR-10 batch that is a dangling link",
       [](const fs::path& dir) {
         fs::create_symlink(dir / "nowhere.bin", dir / "test_batch.bin");
         return dir / "test_batch.bin";
       },
       read_cifar10_test, {"missing file"}},

      // IDX, raw and gzipped.
      {"IDX empty image file", idx_pair({}, idx_labels(3, 3), false, false, false), read_idx_in,
       {"truncated: 0 bytes, shorter than the 16-byte image header"}},
      {"IDX image header cut at 10 bytes", idx_pair(cut(idx_images(3, 4, 4, 48), 10), idx_labels(3, 3), false, false, false),
       read_idx_in, {"truncated: 10 bytes"}},
      {"IDX label header cut at 6 bytes", idx_pair(idx_images(3, 4, 4, 48), cut(idx_labels(3, 3), 6), false, false, true),
       read_idx_in, {"truncated: 6 bytes, shorter than the 8-byte label header"}},
      {"IDX raw images with a trailing byte", idx_pair(idx_images(3, 4, 4, 49), idx_labels(3, 3), false, false, false),
       read_idx_in, {"has trailing data: expected 48 image bytes after the header, found 49"}},
      {"IDX gzipped images with trailing data", idx_pair(idx_images(3, 4, 4, 60), idx_labels(3, 3), true, false, false),
       read_idx_in, {"has trailing data"}},
      {"IDX gzipped labels one short", idx_pair(idx_images(3, 4, 4, 48), idx_labels(3, 2), false, true, true),
       read_idx_in, {"is truncated: expected 3 label bytes after the header, found 2"}},
      {"IDX labels with the image magic", idx_pair(idx_images(3, 4, 4, 48), idx_images(3, 4, 4, 48), false, false, true),
       read_idx_in, {"magic 0x00000803, expected 0x00000801"}},
      {"IDX images with a float magic", idx_pair(idx_images(3, 4, 4, 48, 0x00000d03), idx_labels(3, 3), true, false, false),
       read_idx_in, {"magic 0x00000d03, expected 0x00000803"}},
      {"IDX zero rows", idx_pair(idx_images(3, 0, 4, 0), idx_labels(3, 3), false, false, false), read_idx_in,
       {"header sizes 3 x 0 x 4 include a zero"}},
      {"IDX zero images and labels", idx_pair(idx_images(0, 28, 28, 0), idx_labels(0, 0), false, false, false),
       read_idx_in, {"header sizes 0 x 28 x 28 include a zero"}},
      // 4096 x 2^26 x 2^26 = 2^64 wraps to 0: header-only images would pass as "exact".
      {"IDX sizes whose product wraps to 0", idx_pair(idx_images(4096, 1u << 26, 1u << 26, 0), idx_labels(4096, 4096), false, false, false),
       read_idx_in, {"4096 x 67108864 x 67108864 multiply to more than 2^64"}},
      {"IDX gzip cut in half", raw_gz_images(cut(good_gz_images(), good_gz_images().size() / 2)), read_idx_in, {}},
      {"IDX gzip with corrupted deflate data", raw_gz_images(flipped(good_gz_images(), 12, 30)), read_idx_in, {}},
      {"IDX gzip magic then garbage", raw_gz_images(cat({0x1f, 0x8b}, pattern(100))), read_idx_in, {}},
      {"IDX image file that is a folder",
       [](const fs::path& dir) {
         fs::create_directories(dir / "images.idx");
         testdata::write_bytes(dir / "labels.idx", idx_labels(3, 3));
         return dir / "images.idx";
       },
       read_idx_in, {"missing file"}},
      {"MNIST folder without label files",
       [](const fs::path& dir) {
         testdata::write_bytes(dir / "train-images-idx3-ubyte.gz", testdata::gzip_bytes(idx_images(3, 4, 4, 48)));
         return dir / "train-labels-idx1-ubyte";
       },
       [](const fs::path& dir) { read_mnist_dir(dir.string(), true); }, {"missing file", "[.gz]"}},

      // JPEG in an ImageFolder tree.
      {"JPEG of zero bytes", folder_with("empty.JPEG", {}), read_folder, {"not a readable JPEG"}},
      {"PNG named .JPEG", folder_with("png.JPEG", cat({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, pattern(64))),
       read_folder, {"not a readable JPEG"}},
      {"JPEG of start and end markers only", folder_with("bare.jpg", {0xff, 0xd8, 0xff, 0xd9}), read_folder,
       {"not a readable JPEG"}},
      {"JPEG with a corrupted frame header", folder_with("sof.JPEG", flipped(jpeg, sof, sof + 8)), read_folder, {"ImageFolder"}},
      {"JPEG cut right after its scan header", folder_with("scan.JPEG", cut(jpeg, sos + 12)), read_folder,
       {"corrupt JPEG data"}},
      // 2000 x 65000 cannot be DCT-scaled to a 2048 shorter side: decoding it whole would take
      // 390 MB before the (missing) scan data is even looked at.
      {"JPEG whose header claims 2000 x 65000 pixels", folder_with("huge.JPEG", with_frame_size(jpeg, 2000, 65000)),
       [](const fs::path& dir) { read_image_folder(dir.string(), "train", 0, 0, 2048); },
       {"2000 x 65000 pixels", "more than the 67108864 pixels"}},
      // 10000 x 10000 DCT-scales to 1250 x 1250 for a 32-pixel side, but a progressive JPEG's
      // coefficients are buffered whole first (600 MB here; fuzzing found 6.4 GB).
      {"JPEG whose header claims 10000 x 10000 pixels, read small", folder_with("big.JPEG", with_frame_size(jpeg, 10000, 10000)),
       [](const fs::path& dir) { read_image_folder(dir.string(), "train", 0, 0, 32); },
       {"a frame of 10000 x 10000 pixels", "more than the 67108864 pixels"}},
      {"JPEG name on a dangling link",
       [](const fs::path& dir) {
         testdata::write_bytes(dir / "train" / "a" / "ok.JPEG", good_jpeg());
         fs::create_directories(dir / "train" / "b");
         testdata::write_bytes(dir / "train" / "b" / "ok.JPEG", good_jpeg());
         fs::create_symlink(dir / "gone.JPEG", dir / "train" / "b" / "link.JPEG");
         return dir / "train" / "b" / "link.JPEG";
       },
       read_folder, {"is not a readable file"}},
      {"JPEG name on a FIFO (would block a reader)",
       [](const fs::path& dir) {
         testdata::write_bytes(dir / "train" / "a" / "ok.JPEG", good_jpeg());
         fs::create_directories(dir / "train" / "b");
         const fs::path fifo = dir / "train" / "b" / "pipe.JPEG";
         if (::mkfifo(fifo.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
         return fifo;
       },
       read_folder, {"is not a readable file"}},
      {"class folder holding only other files",
       [](const fs::path& dir) {
         testdata::write_bytes(dir / "train" / "a" / "ok.JPEG", good_jpeg());
         testdata::write_bytes(dir / "train" / "b" / "notes.txt", {'x'});
         fs::create_directories(dir / "train" / "b" / "nested.JPEG");
         return dir / "train" / "b";
       },
       read_folder, {"holds no .JPEG/.jpg files"}},
      {"fewer classes than asked for",
       [](const fs::path& dir) {
         testdata::write_bytes(dir / "train" / "a" / "ok.JPEG", good_jpeg());
         testdata::write_bytes(dir / "train" / "b" / "ok.JPEG", good_jpeg());
         return dir / "train";
       },
       [](const fs::path& dir) { read_image_folder(dir.string(), "train", 5, 0, 8); },
       {"has 2 class folders, fewer than the 5 asked for"}},
      {"split folder that is a file",
       [](const fs::path& dir) {
         testdata::write_bytes(dir / "train", good_jpeg());
         return dir / "train";
       },
       read_folder, {"missing split folder"}},
  };
  // clang-format on
}

TEST(BadData, EveryFileIsRejectedNamingIt) {
  int tried = 0;
  for (const BadData& row : bad_files()) {
    TempDir tmp("bad_data");
    const fs::path blamed = row.write(tmp.path());
    try {
      row.read(tmp.path());
      ADD_FAILURE() << row.what << ": read without error";
    } catch (const DataError& e) {
      ++tried;
      const std::string message = e.what();
      if (std::getenv("CEDAR_SHOW_ERRORS") != nullptr)
        std::printf("  %-44s %s\n", row.what, message.c_str());
      EXPECT_NE(message.find(blamed.string()), std::string::npos)
          << row.what << ": message '" << message << "' does not name " << blamed;
      for (const auto& part : row.expect)
        EXPECT_NE(message.find(part), std::string::npos)
            << row.what << ": message '" << message << "' lacks '" << part << "'";
    } catch (const std::exception& e) {
      ADD_FAILURE() << row.what << ": not a DataError: " << e.what();
    }
  }
  std::printf("[ info     ] %d bad data files rejected\n", tried);
}

// The corruptions above break files that read correctly when intact.
TEST(BadData, IntactCounterpartsRead) {
  TempDir tmp("good_data");
  testdata::write_bytes(tmp.path() / "test_batch.bin", cifar10_records({3, 9, 4}));
  EXPECT_EQ(read_cifar(tmp.str(), 10, false).count, 3);
  testdata::write_bytes(tmp.path() / "test.bin", cifar100_records({5, 19}, {1, 99}));
  EXPECT_EQ(read_cifar(tmp.str(), 100, false).labels, (std::vector<int64_t>{1, 99}));
  testdata::write_bytes(tmp.path() / "images.idx.gz", good_gz_images());
  testdata::write_bytes(tmp.path() / "labels.idx", idx_labels(3, 3));
  const ImageSet idx =
      read_idx((tmp.path() / "images.idx.gz").string(), (tmp.path() / "labels.idx").string());
  EXPECT_EQ(idx.pixels, pattern(48));
  testdata::write_bytes(tmp.path() / "f" / "train" / "a" / "ok.JPEG", good_jpeg());
  testdata::write_bytes(tmp.path() / "f" / "train" / "a" / "README", {'x'});
  EXPECT_EQ(read_image_folder((tmp.path() / "f").string(), "train", 0, 0, 8).count, 1);
}

// --- Memory bounds ------------------------------------------------------------------------------

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized =
    true;  // AddressSanitizer maps its shadow memory: no address-space limit
#else
constexpr bool kSanitized = false;
#endif

// The address space this process has mapped now.
size_t mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0;
  in >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Runs `body` in a child process that may map at most `headroom` bytes more than this one has now
// (RLIMIT_AS; no limit under AddressSanitizer) and says how it went: "ok", "out of memory" (it
// needed more), the message of any other exception, or the signal that ended it.
std::string run_with_headroom(size_t headroom, const std::function<void()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    std::string result = "ok";
    const rlimit limit{mapped_bytes() + headroom, mapped_bytes() + headroom};
    if (!kSanitized && setrlimit(RLIMIT_AS, &limit) != 0) {
      result = "setrlimit failed";
    } else {
      try {
        body();
      } catch (const std::bad_alloc&) {
        result = "out of memory";
      } catch (const std::exception& e) {
        result = e.what();
      }
    }
    const ssize_t written = write(fds[1], result.data(), result.size());
    _exit(written == static_cast<ssize_t>(result.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return out;
}

constexpr size_t kHeadroom = size_t{256} << 20;

// A 1-pixel-wide, 65000-pixel-tall JPEG (and its transpose) at image_size 1024: the shorter side
// scales up 1024 times, to a virtual 1024 x 66.5-million image of which only the centre
// 1024 x 1024 is kept. Resizing every source row for it took 65000 x 1024 x 3 floats (800 MB).
TEST(BadData, ThinImagesResizeInBoundedMemory) {
  if (kSanitized) GTEST_SKIP() << "no address-space limit under AddressSanitizer";
  TempDir tmp("thin_jpeg");
  const std::array<uint8_t, 3> colour{200, 100, 50};
  testdata::write_solid_jpeg(tmp.path() / "train" / "tall" / "tall.JPEG", 1, 65000, colour);
  testdata::write_solid_jpeg(tmp.path() / "train" / "wide" / "wide.JPEG", 65000, 1, colour);
  const auto read = [&] { return read_image_folder(tmp.str(), "train", 0, 0, 1024); };
  ASSERT_EQ(run_with_headroom(kHeadroom, [&] { read(); }), "ok");
  // What it computes is the solid colour, channel-planar, in every pixel of both images.
  const ImageSet set = read();
  ASSERT_EQ(set.count, 2);
  const size_t plane = 1024 * 1024;
  for (int64_t i = 0; i < set.count; ++i)
    for (size_t c = 0; c < 3; ++c) {
      const uint8_t* p = set.image(i) + c * plane;
      const auto [lo, hi] = std::minmax_element(p, p + plane);
      EXPECT_LE(std::abs(*lo - colour[c]), 2) << "image " << i << " channel " << c;
      EXPECT_LE(std::abs(*hi - colour[c]), 2) << "image " << i << " channel " << c;
    }
}

// An IDX image file whose header declares 3 images of 4 x 4 but whose gzip members inflate to
// 1 GiB: the reader stops one byte past the declared payload instead of inflating it all.
TEST(BadData, GzipBombStopsPastTheDeclaredSize) {
  if (kSanitized) GTEST_SKIP() << "no address-space limit under AddressSanitizer";
  TempDir tmp("gzip_bomb");
  const std::vector<uint8_t> zeros(size_t{16} << 20, 0);
  std::vector<uint8_t> file = testdata::gzip_bytes(cat(idx_images(3, 4, 4, 48), zeros));
  const std::vector<uint8_t> member = testdata::gzip_bytes(zeros);
  for (int i = 1; i < 64; ++i) file = cat(file, member);  // gzip members concatenate (RFC 1952)
  const fs::path images = tmp.path() / "images.idx.gz", labels = tmp.path() / "labels.idx";
  testdata::write_bytes(images, file);
  testdata::write_bytes(labels, idx_labels(3, 3));
  const std::string result =
      run_with_headroom(kHeadroom, [&] { read_idx(images.string(), labels.string()); });
  EXPECT_NE(
      result.find(images.string() + " has trailing data: expected 48 image bytes after the header"),
      std::string::npos)
      << result;
}

// A side whose square overflows: 3 x 2^32 x 2^32 bytes per image wraps to 0 in 64 bits.
TEST(BadData, SyntheticSizesAreBounded) {
  const std::string result =
      run_with_headroom(kHeadroom, [] { make_synthetic(2, 3, int64_t{1} << 32, 10, 1); });
  EXPECT_NE(result.find("make_synthetic: count=2 channels=3 size=4294967296"), std::string::npos)
      << result;
  EXPECT_NE(result.find("size must be in [1, 4096]"), std::string::npos) << result;
  EXPECT_THROW(make_synthetic(1, 1, 4097, 1, 1), std::invalid_argument);
  EXPECT_EQ(make_synthetic(2, 3, 16, 10, 1).pixels.size(), size_t{2} * 3 * 16 * 16);
}

}  // namespace
}  // namespace cedar
