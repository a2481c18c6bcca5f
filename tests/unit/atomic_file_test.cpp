// Files published whole (platform/atomic_file.h): the final name appears only with the whole
// contents and the asked permissions, nothing is left beside it, and a failure names the path and
// leaves neither the partial nor a final file.
#include "platform/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cedar {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("atomic_file_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, WritesTheWholeContentsWithTheMode) {
  const fs::path dir = fresh_dir("write");
  const fs::path path = dir / "state";
  std::string bytes(100000, 'x');
  bytes[5] = '\0';  // binary contents, not a C string
  write_file_atomically(path.string(), bytes, PublishOptions{true, 0750});
  EXPECT_EQ(read(path), bytes);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  EXPECT_FALSE(fs::exists(dir / "state.partial"));
  // Replacing an existing file: the new contents, whole.
  write_file_atomically(path.string(), "second");
  EXPECT_EQ(read(path), "second");
}

TEST(AtomicFile, PublishRenamesAFinishedFile) {
  const fs::path dir = fresh_dir("publish");
  std::ofstream(dir / "written") << "done";
  publish_file((dir / "written").string(), (dir / "final").string());
  EXPECT_EQ(read(dir / "final"), "done");
  EXPECT_FALSE(fs::exists(dir / "written"));
}

TEST(AtomicFile, AFailureNamesThePathAndLeavesNothing) {
  const fs::path dir = fresh_dir("fail");
  const fs::path missing = dir / "no_such_folder" / "file";
  try {
    write_file_atomically(missing.string(), "x");
    ADD_FAILURE() << "wrote into a folder that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_folder"), std::string::npos) << e.what();
  }
  // A rename onto a folder fails: the written file is removed, the folder untouched.
  fs::create_directories(dir / "a_folder" / "inside");
  std::ofstream(dir / "written") << "done";
  EXPECT_THROW(publish_file((dir / "written").string(), (dir / "a_folder").string()),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(dir / "written"));
  EXPECT_TRUE(fs::is_directory(dir / "a_folder" / "inside"));
}

}  // namespace
}  // namespace cedar
