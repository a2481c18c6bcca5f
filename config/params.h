#pragma once
// Typed hyper-parameters described once, read from YAML, dumped back and documented.
// A parameter struct lists its fields in `template <class V> void visit(V& v)` as
//   v("sparsity", sparsity, "fraction of gradient entries not sent", in_range(0, 1, false));
// and the visitors below parse it (unknown keys and bad values are errors naming
// file:line:column and the key), write the resolved values, or list the defaults.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace cedar {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Allowed range of a numeric parameter.
struct Bound {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;
  std::vector<std::string> choices;  // for strings: allowed values (empty = any)
  // Where output goes, not what runs: read, checked and documented, but left out of the resolved
  // configuration (YamlDumper), so that it is no part of a run's fingerprint.
  bool output = false;
  // A key left out of the resolved configuration while it holds this value (a string key's
  // `unrecorded`, a number's `unrecorded_number`), so that a key added with it as default leaves
  // the fingerprints of runs that do not use it as they were.
  std::optional<std::string> unrecorded;
  std::optional<double> unrecorded_number;
  std::string describe() const;
  bool admits(double v) const;
};
Bound at_least(double lo);
Bound greater_than(double lo);
Bound in_range(double lo, double hi, bool hi_open = false);
Bound one_of(std::vector<std::string> choices);
// `bound` marked as a key of where output goes (Bound::output).
Bound output_only(Bound bound = {});
// `bound` marked as left out of the resolved configuration at `value` (Bound::unrecorded).
Bound unrecorded_at(std::string value, Bound bound = {});
Bound unrecorded_at(double value, Bound bound = {});

// Where a node came from, for messages: "file.yaml:12:5" or "--set train.epochs=3".
struct Source {
  std::string file;
  std::set<std::string> overridden;  // dotted keys replaced by --set
};
std::string where(const Source& src, const std::string& key_path, const YAML::Node& node);

// What a node is, for messages: "a mapping", "a list", "a null value" or "a scalar".
const char* node_kind(const YAML::Node& n);
// One entry of a YAML mapping: its key's text, the key node (for its position) and the value.
struct MapEntry {
  std::string key;
  YAML::Node key_node, value;
};
// The entries of mapping `map` at dotted `path` ("" for the document), in order, after checking
// that each key is a plain name and none is repeated (yaml-cpp keeps both copies of a repeated
// key and reads the first, silently). Throws ConfigError naming the place.
std::vector<MapEntry> checked_entries(const YAML::Node& map, const Source& src,
                                      const std::string& path);

class YamlLoader {
 public:
  // `node` must be a map (or null/absent: all defaults). `path` is the dotted prefix, e.g. "train".
  YamlLoader(const YAML::Node& node, const Source& src, std::string path,
             std::set<std::string> ignored = {});
  template <class T>
  void operator()(const char* key, T& value, const char* doc, const Bound& bound = {});
  // Rejects keys no field claimed, naming the first one and the known keys.
  void finish() const;

 private:
  std::string key_path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  YAML::Node node_;
  const Source& src_;
  std::string path_;
  std::set<std::string> seen_;
};

class YamlDumper {
 public:
  explicit YamlDumper(YAML::Emitter& out) : out_(out) {}
  template <class T>
  void operator()(const char* key, T& value, const char* doc, const Bound& bound = {}) {
    if (bound.output) return;
    if constexpr (std::is_same_v<T, std::string>)
      if (bound.unrecorded && value == *bound.unrecorded) return;
    if constexpr (std::is_arithmetic_v<T>)
      if (bound.unrecorded_number && double(value) == *bound.unrecorded_number) return;
    if constexpr (std::is_floating_point_v<T>) {
      out_ << YAML::Key << key << YAML::Value << YAML::Precision(15) << value;
    } else {
      out_ << YAML::Key << key << YAML::Value << value;
    }
  }

 private:
  YAML::Emitter& out_;
};

struct ParamDoc {
  std::string key, default_value, doc, range;
};

class DocCollector {
 public:
  template <class T>
  void operator()(const char* key, T& value, const char* doc, const Bound& bound = {}) {
    YAML::Emitter e;
    if constexpr (std::is_floating_point_v<T>) e << YAML::Precision(15);
    e << YAML::Flow << value;
    docs.push_back({key, e.c_str(), doc, bound.describe()});
  }
  std::vector<ParamDoc> docs;
};

template <class P>
void load_params(P& p, const YAML::Node& node, const Source& src, const std::string& path,
                 std::set<std::string> ignored = {}) {
  YamlLoader loader(node, src, path, std::move(ignored));
  p.visit(loader);
  loader.finish();
}

template <class P>
std::vector<ParamDoc> describe_params() {
  P p;
  DocCollector c;
  p.visit(c);
  return c.docs;
}

}  // namespace cedar
