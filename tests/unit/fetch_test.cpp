// The data-set catalog, the checksums (against the RFC test vectors) and the parts of a fetch that
// need no network: a JSON catalog applied over the built-in one, files given with --from, the
// marker, and a folder that was not fetched by cedar. Downloads through curl, resuming and
// extraction with tar are covered end to end by tests/e2e/data_fetch_test.sh.
#include "datasets/fetch/fetch.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/fetch/catalog.h"
#include "platform/checksum.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "cedar-fetch-test.XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::string eight_times(const std::string& s) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += s;
  return out;
}

// RFC 1321, appendix A.5: the MD5 test suite.
TEST(Checksum, Md5MatchesRfc1321TestSuite) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
       "d174ab98d277d9f5a5611c2c9f419d9f"},
      {eight_times("1234567890"), "57edf4a22be3c955ac49da2e2107b67a"}};
  for (const auto& [input, md5] : cases) EXPECT_EQ(digest_hex(HashKind::kMd5, input), md5) << input;
}

// FIPS 180-2 appendix B (also RFC 6234's test vectors): one block, two blocks, a million 'a's
// (fed in uneven pieces, so the incremental interface is what is checked), and the empty string.
TEST(Checksum, Sha256MatchesFips180TestVectors) {
  EXPECT_EQ(digest_hex(HashKind::kSha256, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      digest_hex(HashKind::kSha256, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digest_hex(HashKind::kSha256, ""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Hasher h(HashKind::kSha256);
  const std::string piece(997, 'a');
  size_t fed = 0;
  while (fed < 1000000) {
    const size_t n = std::min(piece.size(), size_t{1000000} - fed);
    h.update(piece.data(), n);
    fed += n;
  }
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// fastai's check: the MD5 of the first 2^20 bytes only, however the bytes arrive.
TEST(Checksum, Md5FirstMibHashesTheFirstMebibyteOnly) {
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) >> 7);
  const std::string first = data.substr(0, 1 << 20);
  EXPECT_EQ(digest_hex(HashKind::kMd5FirstMib, data), digest_hex(HashKind::kMd5, first));
  EXPECT_NE(digest_hex(HashKind::kMd5FirstMib, data), digest_hex(HashKind::kMd5, data));
  Hasher h(HashKind::kMd5FirstMib);
  for (size_t at = 0; at < data.size(); at += 100003)
    h.update(data.data() + at, std::min<size_t>(100003, data.size() - at));
  EXPECT_EQ(h.hex(), digest_hex(HashKind::kMd5, first));
  // A file shorter than a mebibyte: the MD5 of all of it.
  EXPECT_EQ(digest_hex(HashKind::kMd5FirstMib, "abc"), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(Checksum, FileDigestAndKindNames) {
  Scratch dir;
  write_file(dir.path() / "abc", "abc");
  const FileDigest d = digest_file((dir.path() / "abc").string());
  EXPECT_EQ(d.size, 3u);
  EXPECT_EQ(d.md5, "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(d.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(d.md5_first_mib, d.md5);
  EXPECT_NE(error_of([&] { digest_file((dir.path() / "none").string()); }).find("none"),
            std::string::npos);
  for (HashKind k : {HashKind::kMd5, HashKind::kSha256, HashKind::kMd5FirstMib})
    EXPECT_EQ(hash_kind(hash_name(k)), k);
  EXPECT_NE(error_of([] { hash_kind("sha1"); }).find("sha1"), std::string::npos);
  EXPECT_TRUE(is_hex_digest(HashKind::kMd5, "900150983cd24fb0d6963f7d28e17f72"));
  EXPECT_FALSE(is_hex_digest(HashKind::kMd5, "900150983CD24FB0D6963F7D28E17F72"));
  EXPECT_FALSE(is_hex_digest(HashKind::kSha256, "900150983cd24fb0d6963f7d28e17f72"));
}

TEST(Checksum, MismatchNamesBothSumsAndTheSource) {
  Scratch dir;
  const std::string path = (dir.path() / "abc").string();
  write_file(path, "abc");
  RemoteFile good{"abc", 3, {{HashKind::kMd5, "900150983cd24fb0d6963f7d28e17f72", "RFC 1321"}}};
  EXPECT_EQ(describe_mismatch(path, good), "");
  RemoteFile bad{"abc",
                 4,
                 {{HashKind::kSha256, std::string(64, '0'), "somewhere"},
                  {HashKind::kMd5, "900150983cd24fb0d6963f7d28e17f72", "RFC 1321"}}};
  const std::string why = describe_mismatch(path, bad);
  EXPECT_NE(why.find("size is 3 bytes, expected 4"), std::string::npos) << why;
  EXPECT_NE(why.find("sha256 is ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("expected " + std::string(64, '0') + " (somewhere)"), std::string::npos)
      << why;
  EXPECT_EQ(why.find("md5"), std::string::npos) << "the matching md5 is not a mismatch: " << why;
}

TEST(Catalog, EveryBuiltInEntryIsWellFormed) {
  std::set<std::string> names, dirs, without_whole_file_checksum;
  for (const auto& s : builtin_data_sources()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate name";
    EXPECT_TRUE(dirs.insert(s.dir).second) << "duplicate folder";
    EXPECT_FALSE(s.description.empty());
    EXPECT_FALSE(s.dataset.empty());
    EXPECT_FALSE(s.expect.empty());
    ASSERT_FALSE(s.bases.empty());
    for (const auto& b : s.bases) EXPECT_TRUE(b.back() == '/' && b.rfind("http", 0) == 0) << b;
    ASSERT_FALSE(s.files.empty());
    if (s.unpack == Unpack::kTarGz) {
      EXPECT_EQ(s.files.size(), 1u);
    }
    bool whole = true;
    for (const auto& f : s.files) {
      EXPECT_GT(f.size, 0u) << f.name;
      ASSERT_FALSE(f.checksums.empty()) << f.name;
      bool has_whole = false;
      for (const auto& c : f.checksums) {
        EXPECT_TRUE(is_hex_digest(c.kind, c.value)) << f.name << " " << c.value;
        EXPECT_FALSE(c.source.empty()) << f.name;
        has_whole = has_whole || c.kind != HashKind::kMd5FirstMib;
      }
      whole = whole && has_whole;
    }
    if (!whole) without_whole_file_checksum.insert(s.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"cifar10", "cifar100", "mnist", "fashion-mnist",
                                          "imagenette", "imagenette-160", "imagenette-320",
                                          "imagewoof", "imagewoof-160", "imagewoof-320"}));
  // The documented gap (catalog.cpp): only fastai's first-megabyte MD5 is published for these.
  EXPECT_EQ(without_whole_file_checksum,
            (std::set<std::string>{"imagewoof", "imagewoof-160", "imagewoof-320"}));
}

// The values as their authors publish them (https://www.cs.toronto.edu/~kriz/cifar.html) and the
// layouts the readers expect (datasets/readers.h).
TEST(Catalog, CifarAndMnistMatchThePublishedValuesAndTheReadersLayouts) {
  const auto& catalog = builtin_data_sources();
  const DataSource& c10 = find_data_source(catalog, "cifar10");
  EXPECT_EQ(c10.bases[0] + c10.files[0].name,
            "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz");
  EXPECT_EQ(c10.files[0].checksums[0].value, "c32a1d4ab5d03f1284b67883e8d87530");
  EXPECT_EQ(c10.dir, "cifar10");
  EXPECT_EQ(c10.expect[0], "cifar-10-batches-bin/data_batch_1.bin");
  const DataSource& c100 = find_data_source(catalog, "cifar100");
  EXPECT_EQ(c100.files[0].checksums[0].value, "03b5dce01913d631647c71ecec9e9cb8");
  EXPECT_EQ(c100.expect,
            (std::vector<std::string>{"cifar-100-binary/train.bin", "cifar-100-binary/test.bin"}));
  for (const char* name : {"mnist", "fashion-mnist"}) {
    const DataSource& m = find_data_source(catalog, name);
    EXPECT_EQ(m.unpack, Unpack::kNone);
    EXPECT_EQ(m.expect,
              (std::vector<std::string>{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}));
  }
  const DataSource& nette = find_data_source(catalog, "imagenette-160");
  EXPECT_EQ(nette.top_folder, "imagenette2-160");
  EXPECT_EQ(nette.dataset, "imagenet-folder");
  EXPECT_NE(error_of([&] { find_data_source(catalog, "cifar-10"); }).find("known: cifar10"),
            std::string::npos);
}

// Every data.root under data/ in experiments/*.yaml is where `cedar data fetch` puts a data set.
TEST(Catalog, ExperimentDataRootsAreFetchFolders) {
  const char* src = std::getenv("CEDAR_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "CEDAR_SOURCE_DIR is set by ctest";
  std::set<std::string> dirs;
  for (const auto& s : builtin_data_sources()) dirs.insert(s.dir);
  int roots = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(src) / "experiments")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::string line, key, value;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      if (!(words >> key >> value) || key != "root:" || value.rfind("data/", 0) != 0) continue;
      ++roots;
      EXPECT_TRUE(dirs.count(value.substr(5))) << entry.path() << ": " << value;
    }
  }
  EXPECT_GT(roots, 0);
}

TEST(CatalogFile, ReplacesWhatItGivesAndKeepsTheLayout) {
  Scratch dir;
  const fs::path file = dir.path() / "catalog.json";
  write_file(file, R"({"cifar10": {"base": "file:///srv/mirror",
                                   "files": [{"name": "c.tar.gz", "size": 5,
                                              "sha256": ")" +
                       std::string(64, 'a') + R"("}]},
                      "tiny": {"bases": ["https://example.org/t/"],
                               "files": [{"name": "tiny.tgz", "md5-first-mib": ")" +
                       std::string(32, 'b') + R"("}], "top_folder": "tiny"}})");
  const auto catalog = apply_catalog_file(builtin_data_sources(), file.string());
  const DataSource& c10 = find_data_source(catalog, "cifar10");
  EXPECT_EQ(c10.bases, (std::vector<std::string>{"file:///srv/mirror/"}));
  ASSERT_EQ(c10.files.size(), 1u);
  EXPECT_EQ(c10.files[0].name, "c.tar.gz");
  EXPECT_EQ(c10.files[0].size, 5u);
  EXPECT_EQ(c10.files[0].checksums[0].kind, HashKind::kSha256);
  EXPECT_NE(c10.files[0].checksums[0].source.find(file.string()), std::string::npos);
  EXPECT_EQ(c10.dir, "cifar10");
  EXPECT_EQ(c10.expect, find_data_source(builtin_data_sources(), "cifar10").expect);
  const DataSource& tiny = find_data_source(catalog, "tiny");
  EXPECT_EQ(tiny.dir, "tiny");
  EXPECT_EQ(tiny.unpack, Unpack::kTarGz);
  EXPECT_EQ(tiny.top_folder, "tiny");
  EXPECT_EQ(catalog.size(), builtin_data_sources().size() + 1);

  ::setenv("CEDAR_DATA_CATALOG", file.string().c_str(), 1);
  EXPECT_EQ(find_data_source(data_catalog(), "cifar10").files[0].name, "c.tar.gz");
  ::unsetenv("CEDAR_DATA_CATALOG");
  EXPECT_EQ(find_data_source(data_catalog(), "cifar10").files[0].name, "cifar-10-binary.tar.gz");
}

TEST(CatalogFile, BadEntriesAreErrorsNamingTheFileAndKey) {
  Scratch dir;
  const fs::path file = dir.path() / "bad.json";
  const std::string sha(64, 'c');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"cifar10": {"bse": "x"}})", "cifar10: unknown key 'bse'"},
      {R"({"cifar10": {"files": [{"name": "a.tgz", "sha265": "x"}]}})",
       "cifar10.files[0]: unknown key 'sha265'"},
      {R"({"cifar10": {"files": [{"name": "a.tgz", "md5": "XYZ"}]}})",
       "cifar10.files[0].md5: 'XYZ' is not 32 lowercase hex digits"},
      {R"({"cifar10": {"files": [{"name": "a.tgz", "size": 3}]}})", "no checksum"},
      {R"({"new": {"files": [{"name": "a.tgz", "sha256": ")" + sha + R"("}]}})",
       "new: a data set not in the built-in catalog needs 'base'"},
      {R"({"cifar10": {"dir": "../elsewhere"}})", "cifar10.dir: '../elsewhere' must be a relative"},
      {R"({"cifar10": {"files": [{"name": "../a.tgz", "sha256": ")" + sha + R"("}]}})",
       "is not a plain file name"},
      {R"([1, 2])", "expected an object"},
      {R"({"cifar10": )", "not valid JSON"}};
  for (const auto& [text, expected] : cases) {
    write_file(file, text);
    const std::string why =
        error_of([&] { apply_catalog_file(builtin_data_sources(), file.string()); });
    EXPECT_NE(why.find(file.string()), std::string::npos) << why;
    EXPECT_NE(why.find(expected), std::string::npos) << text << " -> " << why;
  }
}

// A data set of plain files given with --from (a folder): verified, copied into place with the
// marker; the second fetch does nothing; the given files stay where they were.
TEST(Fetch, FromAFolderInstallsOnceAndLeavesTheGivenFiles) {
  Scratch dir;
  const fs::path given = dir.path() / "given";
  write_file(given / "one.bin", "abc");
  write_file(given / "two.bin", "message digest");
  DataSource s;
  s.name = "plain";
  s.dir = "plain";
  s.bases = {"https://unused.invalid/"};
  s.unpack = Unpack::kNone;
  s.files = {{"one.bin", 3, {{HashKind::kMd5, "900150983cd24fb0d6963f7d28e17f72", "RFC 1321"}}},
             {"two.bin", 14, {{HashKind::kMd5, "f96b697d7cb7938d525a2f31aaf161d0", "RFC 1321"}}}};
  s.expect = {"one.bin", "two.bin"};
  FetchOptions o;
  o.root = (dir.path() / "data").string();
  o.from = given.string();
  const FetchResult first = fetch_data(s, o);
  EXPECT_EQ(first.outcome, FetchOutcome::kInstalled);
  EXPECT_EQ(read_file(dir.path() / "data/plain/two.bin"), "message digest");
  EXPECT_TRUE(fs::exists(given / "one.bin"));
  const std::string marker = read_file(dir.path() / "data/plain" / kFetchMarker);
  EXPECT_NE(marker.find("\"name\": \"plain\""), std::string::npos) << marker;
  EXPECT_NE(marker.find("f96b697d7cb7938d525a2f31aaf161d0"), std::string::npos) << marker;
  EXPECT_EQ(data_status(s, o.root).state, DataStatus::kFetched);

  fs::remove_all(given);  // nothing to fetch from: a second fetch must not need it
  const FetchResult second = fetch_data(s, o);
  EXPECT_EQ(second.outcome, FetchOutcome::kAlreadyPresent);
  EXPECT_EQ(second.source, first.source);
}

TEST(Fetch, GivenFileThatDoesNotMatchIsReportedAndKept) {
  Scratch dir;
  write_file(dir.path() / "one.tgz", "not the archive");
  DataSource s;
  s.name = "arch";
  s.dir = "arch";
  s.bases = {"https://unused.invalid/"};
  s.files = {{"one.tgz", 0, {{HashKind::kMd5, "900150983cd24fb0d6963f7d28e17f72", "RFC 1321"}}}};
  FetchOptions o;
  o.root = (dir.path() / "data").string();
  o.from = (dir.path() / "one.tgz").string();
  const std::string why = error_of([&] { fetch_data(s, o); });
  EXPECT_NE(why.find(o.from), std::string::npos) << why;
  EXPECT_NE(why.find("expected 900150983cd24fb0d6963f7d28e17f72"), std::string::npos) << why;
  EXPECT_NE(why.find("md5 is " + digest_hex(HashKind::kMd5, "not the archive")), std::string::npos)
      << why;
  EXPECT_TRUE(fs::exists(o.from)) << "a file given with --from is the user's: never removed";
  EXPECT_FALSE(fs::exists(dir.path() / "data/arch"));
}

// A folder cedar did not fetch is never overwritten or removed.
TEST(Fetch, RefusesAFolderWithoutItsMarker) {
  Scratch dir;
  write_file(dir.path() / "data/cifar10/mine.txt", "user data");
  FetchOptions o;
  o.root = (dir.path() / "data").string();
  o.from = (dir.path() / "nowhere.tar.gz").string();
  const DataSource& c10 = find_data_source(builtin_data_sources(), "cifar10");
  const std::string why = error_of([&] { fetch_data(c10, o); });
  EXPECT_NE(why.find("data/cifar10 exists but holds no .cedar-fetched marker"), std::string::npos)
      << why;
  EXPECT_EQ(read_file(dir.path() / "data/cifar10/mine.txt"), "user data");
  EXPECT_EQ(data_status(c10, o.root).state, DataStatus::kUnmarked);
}

TEST(Fetch, FormatsBytesInDecimalUnits) {
  EXPECT_EQ(format_bytes(999), "999 B");
  EXPECT_EQ(format_bytes(170052171), "170.1 MB");
  EXPECT_EQ(format_bytes(1557161267), "1.6 GB");
}

}  // namespace
}  // namespace cedar
