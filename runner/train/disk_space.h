#pragma once
// Free-space checks before a run starts, so that a full disk is a clear error up front instead
// of a failed write in the middle of training. No LibTorch here.
#include <cstdint>
#include <string>

namespace cedar {

// Bytes available to this process on the file system holding `path` (a file or folder, which
// need not exist yet: its nearest existing parent is used). -1 when it cannot be determined.
int64_t free_bytes(const std::string& path);

// Throws std::runtime_error naming `what`, the folder and both figures when fewer than `needed`
// bytes are free there.
void require_free_space(const std::string& path, int64_t needed, const std::string& what);

}  // namespace cedar
