#pragma once
// Files that readers see whole or not at all: written beside their path, then renamed onto it
// (a rename within one folder is atomic on POSIX filesystems). Checkpoints, results dumps,
// downloads, the virtual cluster's state and the test hooks' hold files are published this way.
#include <sys/types.h>

#include <string>
#include <string_view>

namespace cedar {

struct PublishOptions {
  // fsync the file before the rename, so that a crash after it cannot leave an empty or partial
  // file under the final name (checkpoints); off where a lost file is only written again.
  bool durable = false;
  // Permissions to give the file before it appears (0: leave those it was created with).
  mode_t mode = 0;
};

// Renames the finished file `written` onto `path` (after fsync and chmod as `options` say). On
// failure `written` is removed and std::runtime_error names `path` and the system's reason.
void publish_file(const std::string& written, const std::string& path,
                  const PublishOptions& options = {});

// Writes `bytes` to `path` + ".partial", then publishes it onto `path`.
void write_file_atomically(const std::string& path, std::string_view bytes,
                           const PublishOptions& options = {});

}  // namespace cedar
