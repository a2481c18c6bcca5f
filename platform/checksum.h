#pragma once
// File and byte digests computed with OpenSSL's EVP API: the checksums of downloaded data sets
// and the fingerprint a run records of a scripted compressor's module. No LibTorch here.
//
// Three kinds, named as the catalog names them:
//   md5            MD5 of the whole file (what CIFAR's authors and torchvision publish)
//   sha256         SHA-256 of the whole file (what TensorFlow Datasets publishes)
//   md5-first-mib  MD5 of the file's first 2^20 bytes: what fastai's checks.txt records
//                  (fastai's `path_stats`: "size of fpath and md5 of its first megabyte")
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cedar {

enum class HashKind { kMd5, kSha256, kMd5FirstMib };

// "md5", "sha256", "md5-first-mib".
const char* hash_name(HashKind kind);
// The kind called `name`; throws std::invalid_argument naming it otherwise.
HashKind hash_kind(const std::string& name);
// Hex digits in a digest of this kind (32 or 64).
size_t hash_hex_length(HashKind kind);
// Whether `value` is a well-formed lowercase hex digest of `kind`.
bool is_hex_digest(HashKind kind, const std::string& value);

// An incremental digest: update() with the bytes in order, then hex().
class Hasher {
 public:
  explicit Hasher(HashKind kind);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  void update(const void* data, size_t bytes);
  // The digest as lowercase hex; the hasher takes no more bytes afterwards.
  std::string hex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The digest of a string of bytes.
std::string digest_hex(HashKind kind, const std::string& bytes);

struct FileDigest {
  uint64_t size = 0;
  std::string md5, sha256, md5_first_mib;
  const std::string& of(HashKind kind) const;
};

// Size and every digest of the file at `path`, in one pass. Throws std::runtime_error naming the
// file when it cannot be read.
FileDigest digest_file(const std::string& path);

}  // namespace cedar
