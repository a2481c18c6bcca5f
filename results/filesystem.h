#pragma once
// Which filesystem a path lives on, from statfs(2)'s magic number. SQLite's WAL mode needs every
// process using a database on one host (its index is shared memory), so the results store asks
// this before choosing how to write (results/results_mode.h).
#include <cstdint>
#include <string>

namespace cedar {

struct FilesystemInfo {
  std::string type;      // "nfs", "lustre", "ext4", ... or "unknown (0x…)"
  bool network = false;  // shared between hosts: processes on several nodes may write it
};

// The filesystem with this statfs f_type magic number (one table in filesystem.cpp). A type not in
// the table counts as shared: only filesystems known to be local get SQLite's WAL mode.
FilesystemInfo filesystem_from_magic(uint64_t magic);

// The filesystem holding `path`, or its nearest existing parent folder when it does not exist
// yet. Test hook: CEDAR_TEST_FILESYSTEM=<type> (a name from the table) answers for every path.
FilesystemInfo filesystem_of(const std::string& path);

}  // namespace cedar
