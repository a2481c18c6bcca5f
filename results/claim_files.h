#pragma once
// Suite run claims that hold across hosts, for shard mode: the claim on a run is the lock file
// <db>.shards/claims/<fingerprint>.lock (results/lock_file.h), heartbeat refreshed while the
// claimer lives. (In WAL mode, where every process is on one host, claims live in the database:
// ResultStore::try_claim.)
#include <map>
#include <memory>
#include <string>

#include "results/lock_file.h"

namespace cedar {

class ClaimFiles {
 public:
  explicit ClaimFiles(const std::string& db, double stale_seconds = 120);
  // True when this process now holds the run with this fingerprint (no live claim by another
  // process, on any host).
  bool try_claim(const std::string& fingerprint);
  void release(const std::string& fingerprint);

 private:
  std::string dir_;
  double stale_seconds_;
  std::map<std::string, std::unique_ptr<LockFile>> held_;
};

}  // namespace cedar
