#include "results/filesystem.h"

#include <sys/vfs.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace cedar {
namespace {

struct KnownFilesystem {
  uint64_t magic;
  const char* type;
  bool network;
};

// statfs f_type values: linux/magic.h, and each filesystem's own headers for those not in it.
constexpr KnownFilesystem kFilesystems[] = {
    // Shared between hosts.
    {0x6969, "nfs", true},         // NFS_SUPER_MAGIC (NFSv2, v3 and v4)
    {0x0BD00BD0, "lustre", true},  // LL_SUPER_MAGIC (lustre/include/uapi/linux/lustre)
    {0x47504653, "gpfs", true},    // GPFS_SUPER_MAGIC, "GPFS" (IBM Spectrum Scale)
    {0x19830326, "beegfs", true},  // BEEGFS_MAGIC (beegfs client, fhgfs)
    {0x00C36400, "cephfs", true},  // CEPH_SUPER_MAGIC
    {0xFF534D42, "cifs", true},    // CIFS_SUPER_MAGIC (CIFS / SMB)
    {0xFE534D42, "smb2", true},    // SMB2_SUPER_MAGIC
    {0x517B, "smb", true},         // SMB_SUPER_MAGIC (the old smbfs)
    {0x01021997, "9p", true},      // V9FS_MAGIC
    {0x65735546, "fuse", true},    // FUSE_SUPER_MAGIC (sshfs, gcsfuse, s3fs, ...)
    {0x5346414F, "afs", true},     // AFS_FS_MAGIC (OpenAFS / kAFS)
    {0xAAD7AAEA, "panfs", true},   // PANFS_SUPER_MAGIC (Panasas)
    {0x013111A8, "ibrix", true},   // IBRIX (HPE StoreAll)
    // On this host only.
    {0xEF53, "ext4", false},           // EXT2/3/4_SUPER_MAGIC
    {0x58465342, "xfs", false},        // XFS_SUPER_MAGIC
    {0x9123683E, "btrfs", false},      // BTRFS_SUPER_MAGIC
    {0x01021994, "tmpfs", false},      // TMPFS_MAGIC
    {0x794C7630, "overlayfs", false},  // OVERLAYFS_SUPER_MAGIC (containers)
    {0x2FC12FC1, "zfs", false},        // ZFS_SUPER_MAGIC
    {0xF2F52010, "f2fs", false},       // F2FS_SUPER_MAGIC
    {0x4D44, "vfat", false},           // MSDOS_SUPER_MAGIC
    {0x858458F6, "ramfs", false},      // RAMFS_MAGIC
};

}  // namespace

FilesystemInfo filesystem_from_magic(uint64_t magic) {
  for (const KnownFilesystem& fs : kFilesystems)
    if (fs.magic == magic) return {fs.type, fs.network};
  char hex[32];
  std::snprintf(hex, sizeof hex, "unknown (0x%llX)", static_cast<unsigned long long>(magic));
  return {hex, true};  // not known to be local: treat as shared
}

FilesystemInfo filesystem_of(const std::string& path) {
  if (const char* forced = std::getenv("CEDAR_TEST_FILESYSTEM"); forced && *forced) {
    for (const KnownFilesystem& fs : kFilesystems)
      if (forced == std::string(fs.type)) return {fs.type, fs.network};
    throw std::invalid_argument(std::string("CEDAR_TEST_FILESYSTEM=") + forced +
                                ": not a filesystem type of results/filesystem.cpp");
  }
  namespace fs = std::filesystem;
  fs::path p = fs::absolute(path.empty() ? fs::path(".") : fs::path(path));
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statfs st {};
  if (::statfs(p.c_str(), &st) != 0) return {"unknown (statfs failed)", true};
  return filesystem_from_magic(static_cast<uint64_t>(static_cast<uint32_t>(st.f_type)));
}

}  // namespace cedar
