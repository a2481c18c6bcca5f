#include "results/claim_files.h"

#include <filesystem>

#include "results/results_mode.h"
#include "results/store.h"

namespace cedar {

ClaimFiles::ClaimFiles(const std::string& db, double stale_seconds)
    : dir_(shards_dir(db) + "/claims"), stale_seconds_(stale_seconds) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw StoreError(dir_ + ": cannot create the claims folder: " + ec.message());
}

bool ClaimFiles::try_claim(const std::string& fingerprint) {
  if (held_.count(fingerprint)) return true;
  std::unique_ptr<LockFile> lock;
  try {
    lock = LockFile::try_acquire(dir_ + "/" + fingerprint + ".lock", stale_seconds_);
  } catch (const std::exception& e) {
    throw StoreError(e.what());
  }
  if (!lock) return false;
  held_[fingerprint] = std::move(lock);
  return true;
}

void ClaimFiles::release(const std::string& fingerprint) { held_.erase(fingerprint); }

}  // namespace cedar
