#include "comm/collective_timings_file.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "comm/alpha_beta_least_squares.h"
#include "config/params.h"

namespace cedar {
namespace {

struct TimingParams {
  std::string op;
  int P = 2;
  double bytes = 0, seconds = 0;
  int calls = 1;
  template <class V>
  void visit(V& v) {
    v("op", op, "the collective", one_of(calibrated_collectives()));
    v("P", P, "ranks taking part", at_least(2));
    v("bytes", bytes, "S per call (allgather[v]: per rank)", greater_than(0));
    v("calls", calls, "calls back to back in each timed loop", at_least(1));
    v("seconds", seconds, "median seconds per call", greater_than(0));
  }
};

}  // namespace

void write_collective_timings(const std::string& path, const CollectiveTimingsFile& file) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "measured_on" << YAML::Value << YAML::DoubleQuoted
    << file.measured_on << YAML::Key << "timings" << YAML::Value << YAML::BeginSeq;
  for (const CollectiveTiming& t : file.timings)
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "op" << YAML::Value << t.op << YAML::Key
      << "P" << YAML::Value << t.world << YAML::Key << "bytes" << YAML::Value << YAML::Precision(15)
      << t.bytes << YAML::Key << "calls" << YAML::Value << t.calls << YAML::Key << "seconds"
      << YAML::Value << YAML::Precision(15) << t.seconds << YAML::EndMap;
  e << YAML::EndSeq << YAML::EndMap;
  std::ofstream out(path);
  out << e.c_str() << "\n";
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write the timings file");
}

CollectiveTimingsFile load_collective_timings(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(path + ": cannot read the timings file");
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                      std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  const Source src{path, {}};
  if (!root.IsMap())
    throw ConfigError(path + ": expected a mapping with 'measured_on' and 'timings', not " +
                      node_kind(root));
  CollectiveTimingsFile out;
  for (const MapEntry& entry : checked_entries(root, src, "")) {
    if (entry.key == "measured_on") {
      if (!entry.value.IsScalar())
        throw ConfigError(where(src, "measured_on", entry.value) +
                          ": measured_on: expected text, not " + node_kind(entry.value));
      out.measured_on = entry.value.Scalar();
    } else if (entry.key != "timings") {
      throw ConfigError(where(src, entry.key, entry.key_node) + ": " + entry.key +
                        ": unknown key (known: measured_on, timings)");
    }
  }
  const YAML::Node list = root["timings"];
  if (!list.IsSequence())
    throw ConfigError(where(src, "timings", list ? list : root) +
                      ": timings: expected a list of {op, P, bytes, calls, seconds}");
  std::set<std::tuple<std::string, int, double>> seen;
  for (const YAML::Node& item : list) {
    TimingParams t;
    load_params(t, item, src, "timings[]");
    for (const char* key : {"op", "bytes", "seconds"})
      if (!item[key])
        throw ConfigError(where(src, "timings[]", item) +
                          ": timings[]: 'op', 'bytes' and 'seconds' are required");
    if (std::fmod(t.bytes, 4) != 0)
      throw ConfigError(where(src, "timings[].bytes", item["bytes"]) +
                        ": timings[].bytes: not a multiple of 4 (fp32 values)");
    if (!seen.emplace(t.op, t.P, t.bytes).second)
      throw ConfigError(where(src, "timings[]", item) + ": timings[]: " + t.op +
                        " at P = " + std::to_string(t.P) + " of " +
                        std::to_string(int64_t(t.bytes)) + " bytes is given twice");
    out.timings.push_back({t.op, t.P, t.bytes, t.seconds, t.calls});
  }
  return out;
}

}  // namespace cedar
