#include "results/gzip_file.h"

#include <zlib.h>

#include <cstdio>
#include <stdexcept>

#include "platform/atomic_file.h"

namespace cedar {

void write_gzip_file(const std::string& path, const std::string& text) {
  z_stream z{};
  // 15 window bits + 16: a gzip wrapper with zlib's default header (no name, time 0).
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error(path + ": cannot start compressing");
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error(path + ": compressing failed");
  write_file_atomically(path, out);
}

std::string read_gzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot read");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  const std::string what = msg ? msg : "read error";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
    throw std::runtime_error(path + ": corrupt or truncated gzip file: " + what);
  return out;
}

}  // namespace cedar
