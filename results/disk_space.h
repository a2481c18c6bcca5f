#pragma once
// Free space and writable folders, checked before anything is written, so that a full disk or a
// read-only folder is a clear error up front instead of a failed write in the middle of training
// (each run checks its own; `cedar suite` and `cedar sbatch` check every run's at once). Also the
// estimates both use of what a run writes. No LibTorch here.
#include <cstdint>
#include <string>

namespace cedar {

// Bytes available to this process on the file system holding `path` (a file or folder, which
// need not exist yet: its nearest existing parent is used). -1 when it cannot be determined.
int64_t free_bytes(const std::string& path);

// Throws std::runtime_error naming `what`, the folder and both figures when fewer than `needed`
// bytes are free there.
void require_free_space(const std::string& path, int64_t needed, const std::string& what);

// The nearest existing folder at or above `path` (itself when it exists): where files are created
// for it, its missing folders included.
std::string nearest_existing(const std::string& path);

// Why nothing could be written at `path` (a folder, or a file's folder, that need not exist yet:
// its folders would be created in its nearest existing parent): "" when a file can be created
// there (tried with a probe file that is removed at once), else the reason naming the folder.
std::string unwritable_reason(const std::string& path);

// About what a run writes: half a kilobyte of database rows per step plus a megabyte; and per
// rank, a checkpoint holds the parameters, buffers, momentum and algorithm state (about four
// times the parameters), twice while a new one replaces the old.
int64_t database_bytes_for(int64_t steps);
int64_t checkpoint_bytes_for(int64_t parameters);

}  // namespace cedar
