#include "platform/checksum.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace cedar {
namespace {

constexpr uint64_t kFirstMib = uint64_t{1} << 20;

const EVP_MD* algorithm(HashKind kind) {
  return kind == HashKind::kSha256 ? EVP_sha256() : EVP_md5();
}

}  // namespace

const char* hash_name(HashKind kind) {
  switch (kind) {
    case HashKind::kMd5: return "md5";
    case HashKind::kSha256: return "sha256";
    case HashKind::kMd5FirstMib: return "md5-first-mib";
  }
  return "?";
}

HashKind hash_kind(const std::string& name) {
  for (HashKind kind : {HashKind::kMd5, HashKind::kSha256, HashKind::kMd5FirstMib})
    if (name == hash_name(kind)) return kind;
  throw std::invalid_argument("unknown checksum kind '" + name +
                              "' (known: md5, sha256, md5-first-mib)");
}

size_t hash_hex_length(HashKind kind) { return kind == HashKind::kSha256 ? 64 : 32; }

bool is_hex_digest(HashKind kind, const std::string& value) {
  return value.size() == hash_hex_length(kind) &&
         std::all_of(value.begin(), value.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

struct Hasher::State {
  HashKind kind;
  uint64_t seen = 0;  // bytes given so far (md5-first-mib stops taking them at 2^20)
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
};

Hasher::Hasher(HashKind kind) : state_(std::make_unique<State>()) {
  state_->kind = kind;
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx.get(), algorithm(kind), nullptr) != 1)
    throw std::runtime_error(std::string("OpenSSL cannot start a ") + hash_name(kind) + " digest");
}

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

void Hasher::update(const void* data, size_t bytes) {
  if (state_->kind == HashKind::kMd5FirstMib)
    bytes = static_cast<size_t>(
        std::min<uint64_t>(bytes, kFirstMib - std::min(state_->seen, kFirstMib)));
  state_->seen += bytes;
  if (bytes > 0 && EVP_DigestUpdate(state_->ctx.get(), data, bytes) != 1)
    throw std::runtime_error(std::string("OpenSSL ") + hash_name(state_->kind) +
                             " digest update failed");
}

std::string Hasher::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(state_->ctx.get(), md, &len) != 1)
    throw std::runtime_error(std::string("OpenSSL ") + hash_name(state_->kind) + " digest failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 0xf];
  }
  return out;
}

std::string digest_hex(HashKind kind, const std::string& bytes) {
  Hasher h(kind);
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

const std::string& FileDigest::of(HashKind kind) const {
  switch (kind) {
    case HashKind::kMd5: return md5;
    case HashKind::kSha256: return sha256;
    case HashKind::kMd5FirstMib: return md5_first_mib;
  }
  return md5;
}

FileDigest digest_file(const std::string& path) {
  std::unique_ptr<std::FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  Hasher md5(HashKind::kMd5), sha256(HashKind::kSha256), first(HashKind::kMd5FirstMib);
  FileDigest out;
  std::string buffer(size_t{1} << 20, '\0');
  for (;;) {
    const size_t got = std::fread(buffer.data(), 1, buffer.size(), f.get());
    if (got > 0) {
      md5.update(buffer.data(), got);
      sha256.update(buffer.data(), got);
      first.update(buffer.data(), got);
      out.size += got;
    }
    if (got < buffer.size()) {
      if (std::ferror(f.get())) throw std::runtime_error("read error in " + path);
      break;
    }
  }
  out.md5 = md5.hex();
  out.sha256 = sha256.hex();
  out.md5_first_mib = first.hex();
  return out;
}

}  // namespace cedar
