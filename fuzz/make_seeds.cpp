// Writes the seed inputs of the reader targets into <dir>/<target>/: valid IDX pairs (raw and
// gzipped), CIFAR-10 and CIFAR-100 batches, and JPEGs (baseline, progressive, grayscale, 4:2:0,
// CMYK) in each target's input format. The config target is seeded from experiments/*.yaml and
// the decoder targets start empty (every byte string is a valid input for them).
#include <turbojpeg.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

void save(const fs::path& file, const Bytes& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

void put_be32(Bytes& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

Bytes gzip(const Bytes& in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  Bytes out(deflateBound(&zs, static_cast<uLong>(in.size())) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// <limit><u32 LE images length><images><labels>, the fuzz_idx input.
Bytes idx_input(uint32_t n, uint32_t rows, uint32_t cols, bool gz, uint8_t limit) {
  Bytes images, labels;
  put_be32(images, 0x803);
  put_be32(images, n);
  put_be32(images, rows);
  put_be32(images, cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) images.push_back(static_cast<uint8_t>(i * 7));
  put_be32(labels, 0x801);
  put_be32(labels, n);
  for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<uint8_t>(i % 10));
  if (gz) images = gzip(images), labels = gzip(labels);
  Bytes out{limit};
  const uint32_t len = static_cast<uint32_t>(images.size());
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>(len >> (8 * b)));
  out.insert(out.end(), images.begin(), images.end());
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

Bytes cifar_input(bool hundred, int records, uint8_t limit) {
  Bytes out{static_cast<uint8_t>((hundred ? 1 : 0) | (limit << 1))};
  for (int r = 0; r < records; ++r) {
    if (hundred) out.push_back(static_cast<uint8_t>(r % 20));
    out.push_back(static_cast<uint8_t>((r * 3) % 10));
    for (int i = 0; i < 3072; ++i) out.push_back(static_cast<uint8_t>(i * 5 + r));
  }
  return out;
}

Bytes jpeg_input(int w, int h, int format, int subsamp, int flags, uint8_t side) {
  const int channels = format == TJPF_GRAY ? 1 : format == TJPF_CMYK ? 4 : 3;
  Bytes px(static_cast<size_t>(w) * h * channels);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 13) ^ (i >> 5));
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj, px.data(), w, 0, h, format, &jpeg, &size, subsamp, 75, flags) != 0)
    throw std::runtime_error(std::string("tjCompress2: ") + tjGetErrorStr2(tj));
  Bytes out{side};
  out.insert(out.end(), jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(tj);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  save(dir / "fuzz_idx" / "raw", idx_input(3, 4, 5, false, 0));
  save(dir / "fuzz_idx" / "gz", idx_input(2, 28, 28, true, 2));
  save(dir / "fuzz_cifar" / "cifar10", cifar_input(false, 2, 0));
  save(dir / "fuzz_cifar" / "cifar100", cifar_input(true, 1, 1));
  save(dir / "fuzz_jpeg" / "baseline", jpeg_input(24, 16, TJPF_RGB, TJSAMP_444, 0, 7));
  save(dir / "fuzz_jpeg" / "progressive",
       jpeg_input(40, 9, TJPF_RGB, TJSAMP_420, TJFLAG_PROGRESSIVE, 20));
  save(dir / "fuzz_jpeg" / "gray", jpeg_input(8, 30, TJPF_GRAY, TJSAMP_GRAY, 0, 3));
  save(dir / "fuzz_jpeg" / "cmyk", jpeg_input(17, 17, TJPF_CMYK, TJSAMP_444, 0, 11));
  save(dir / "fuzz_jpeg" / "large", jpeg_input(96, 64, TJPF_RGB, TJSAMP_422, 0, 47));
  return 0;
}
