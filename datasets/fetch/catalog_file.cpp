// A JSON catalog file applied over the built-in catalog (format in catalog.h): how a site's
// mirror lists archives of its own, and how the tests point `cedar data fetch` at files they
// write.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/fetch/catalog.h"

namespace cedar {
namespace {

using nlohmann::json;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw std::invalid_argument(path_ + ": " + where + ": " + what);
  }
  void only_keys(const json& obj, const std::string& where, const std::set<std::string>& known) {
    if (!obj.is_object()) fail(where, "expected an object");
    for (const auto& item : obj.items()) {
      if (known.count(item.key())) continue;
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(where, "unknown key '" + item.key() + "' (known: " + list + ")");
    }
  }
  std::string text(const json& v, const std::string& where) const {
    if (!v.is_string() || v.get<std::string>().empty()) fail(where, "expected a non-empty string");
    return v.get<std::string>();
  }
  std::vector<std::string> texts(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, "expected a list of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(text(v[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }

  // A path under the data root (or a data set's folder): relative, without "..".
  std::string relative(const json& v, const std::string& where) const {
    const std::string p = text(v, where);
    bool up = false;
    for (const auto& part : std::filesystem::path(p)) up = up || part == "..";
    if (p.front() == '/' || up) fail(where, "'" + p + "' must be a relative path without '..'");
    return p;
  }

  RemoteFile file(const json& v, const std::string& where) {
    only_keys(v, where, {"name", "size", "md5", "sha256", "md5-first-mib"});
    RemoteFile f;
    if (!v.contains("name")) fail(where, "missing key 'name'");
    f.name = text(v["name"], where + ".name");
    if (f.name.find('/') != std::string::npos || f.name == "." || f.name == "..")
      fail(where + ".name", "'" + f.name + "' is not a plain file name");
    if (v.contains("size")) {
      if (!v["size"].is_number_unsigned()) fail(where + ".size", "expected a byte count");
      f.size = v["size"].get<uint64_t>();
    }
    for (HashKind kind : {HashKind::kMd5, HashKind::kSha256, HashKind::kMd5FirstMib}) {
      if (!v.contains(hash_name(kind))) continue;
      const std::string key = where + "." + hash_name(kind);
      const std::string value = text(v[hash_name(kind)], key);
      if (!is_hex_digest(kind, value))
        fail(key, "'" + value + "' is not " + std::to_string(hash_hex_length(kind)) +
                      " lowercase hex digits");
      f.checksums.push_back({kind, value, "CEDAR_DATA_CATALOG " + path_});
    }
    if (f.checksums.empty())
      fail(where,
           "no checksum (give md5, sha256 or md5-first-mib): a download is never unverified");
    return f;
  }

  void apply(DataSource& s, const json& v, const std::string& where, bool is_new) {
    only_keys(v, where,
              {"base", "bases", "files", "description", "dir", "unpack", "top_folder", "expect",
               "dataset"});
    if (v.contains("base") && v.contains("bases")) fail(where, "give 'base' or 'bases', not both");
    if (v.contains("base")) s.bases = {text(v["base"], where + ".base")};
    if (v.contains("bases")) s.bases = texts(v["bases"], where + ".bases");
    if (v.contains("files")) {
      if (!v["files"].is_array() || v["files"].empty()) fail(where + ".files", "expected a list");
      s.files.clear();
      for (size_t i = 0; i < v["files"].size(); ++i)
        s.files.push_back(file(v["files"][i], where + ".files[" + std::to_string(i) + "]"));
    }
    if (v.contains("description")) s.description = text(v["description"], where + ".description");
    if (v.contains("dir")) s.dir = relative(v["dir"], where + ".dir");
    if (v.contains("top_folder")) s.top_folder = relative(v["top_folder"], where + ".top_folder");
    if (v.contains("expect")) {
      s.expect = texts(v["expect"], where + ".expect");
      for (size_t i = 0; i < s.expect.size(); ++i)
        relative(v["expect"][i], where + ".expect[" + std::to_string(i) + "]");
    }
    if (v.contains("dataset")) s.dataset = text(v["dataset"], where + ".dataset");
    if (v.contains("unpack")) {
      const std::string u = text(v["unpack"], where + ".unpack");
      if (u != "tar.gz" && u != "none")
        fail(where + ".unpack", "'" + u + "' is not tar.gz or none");
      s.unpack = u == "tar.gz" ? Unpack::kTarGz : Unpack::kNone;
    } else if (is_new) {
      const bool tarball = s.files.size() == 1 && (ends_with(s.files[0].name, ".tgz") ||
                                                   ends_with(s.files[0].name, ".tar.gz"));
      s.unpack = tarball ? Unpack::kTarGz : Unpack::kNone;
    }
    if (is_new && (s.bases.empty() || s.files.empty()))
      fail(where, "a data set not in the built-in catalog needs 'base' (or 'bases') and 'files'");
    if (s.unpack == Unpack::kTarGz && s.files.size() != 1)
      fail(where, "unpack tar.gz takes exactly one file");
    for (auto& b : s.bases)
      if (b.back() != '/') b += '/';
  }

 private:
  std::string path_;
};

}  // namespace

std::vector<DataSource> apply_catalog_file(std::vector<DataSource> catalog,
                                           const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read the data catalog file " + path);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(path + ": not valid JSON: " + e.what());
  }
  Reader reader(path);
  if (!doc.is_object()) reader.fail("top level", "expected an object of data sets by name");
  for (const auto& item : doc.items()) {
    DataSource* target = nullptr;
    for (auto& s : catalog)
      if (s.name == item.key()) target = &s;
    const bool is_new = target == nullptr;
    if (is_new) {
      catalog.emplace_back();
      target = &catalog.back();
      target->name = item.key();
      target->dir = item.key();
      target->description = "(from " + path + ")";
    }
    reader.apply(*target, item.value(), item.key(), is_new);
  }
  return catalog;
}

std::vector<DataSource> data_catalog() {
  const char* file = std::getenv("CEDAR_DATA_CATALOG");
  if (file == nullptr || *file == '\0') return builtin_data_sources();
  return apply_catalog_file(builtin_data_sources(), file);
}

const DataSource& find_data_source(const std::vector<DataSource>& catalog,
                                   const std::string& name) {
  for (const auto& s : catalog)
    if (s.name == name) return s;
  std::string known;
  for (const auto& s : catalog) known += (known.empty() ? "" : ", ") + s.name;
  throw std::invalid_argument("unknown data set '" + name + "'; known: " + known +
                              " (cedar data list)");
}

}  // namespace cedar
