#include "comm/network_profile_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "comm/alpha_beta_least_squares.h"
#include "config/params.h"

namespace cedar {
namespace {

struct ProfileParams {
  std::string name, measured_on;
  double alpha = 0, beta = 0, bandwidth_gbps = 0;
  template <class V>
  void visit(V& v) {
    v("name", name, "profile name");
    v("alpha", alpha, "latency per message, seconds", at_least(0));
    v("beta", beta, "seconds per byte", greater_than(0));
    v("bandwidth_gbps", bandwidth_gbps, "line rate in 10^9 bits per second", greater_than(0));
    v("measured_on", measured_on, "where the profile was measured (free text)");
  }
};

struct FitParams {
  double alpha = 0, beta = 0;
  template <class V>
  void visit(V& v) {
    v("alpha", alpha, "seconds per latency step", at_least(0));
    v("beta", beta, "seconds per bus byte", at_least(0));
  }
};

struct BandParams {
  double from_bytes = 0, alpha = 0, beta = 0;
  template <class V>
  void visit(V& v) {
    v("from_bytes", from_bytes, "the smallest message of the band, bytes", at_least(0));
    // Negative only in a segment's line above the first band (load_bands checks it).
    v("alpha", alpha, "seconds per latency step");
    v("beta", beta, "seconds per bus byte", at_least(0));
  }
};

// One fit's `bands:` list: [{from_bytes, alpha, beta}, ...], the first from 0, increasing; an α
// below 0 (a segment's line, comm/calibrated_profile.h) only above the first band, and only where
// the band's time at its smallest message, for `op` on `world` ranks, is above 0.
std::vector<SizeBand> load_bands(const YAML::Node& node, const Source& src, const std::string& path,
                                 const std::string& op, int world) {
  if (!node.IsSequence() || node.size() == 0)
    throw ConfigError(where(src, path, node) + ": " + path +
                      ": expected a list of {from_bytes, alpha, beta}, not " +
                      (node.IsSequence() ? std::string("an empty list") : node_kind(node)));
  std::vector<SizeBand> out;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    if (!item.IsMap() || !item["from_bytes"] || !item["alpha"] || !item["beta"])
      throw ConfigError(where(src, item_path, item) + ": " + item_path +
                        ": 'from_bytes', 'alpha' and 'beta' are required");
    BandParams b;
    load_params(b, item, src, item_path);
    if (out.empty() && b.from_bytes != 0)
      throw ConfigError(where(src, item_path + ".from_bytes", item["from_bytes"]) + ": " +
                        item_path + ".from_bytes: the first band starts at 0, not " +
                        item["from_bytes"].Scalar());
    if (!out.empty() && !(b.from_bytes > out.back().from_bytes))
      throw ConfigError(where(src, item_path + ".from_bytes", item["from_bytes"]) + ": " +
                        item_path + ".from_bytes: " + item["from_bytes"].Scalar() +
                        " is not above the band before it");
    if (b.alpha < 0) {
      const TimedSample at = collective_terms(op, world, b.from_bytes);
      if (out.empty() || !(at.latency_steps * b.alpha + at.bus_bytes * b.beta > 0))
        throw ConfigError(where(src, item_path + ".alpha", item["alpha"]) + ": " + item_path +
                          ".alpha: " + item["alpha"].Scalar() +
                          (out.empty()
                               ? " is below 0 in the first band, which reaches 0 bytes"
                               : " prices the band's smallest message (" +
                                     byte_size_text(b.from_bytes) + ") at no time or less"));
    }
    out.push_back({b.from_bytes, {b.alpha, b.beta}});
  }
  return out;
}

// The `collectives:` mapping of one entry: op -> {P: {alpha, beta}}.
void load_collectives(NetworkProfile& out, const YAML::Node& node, const Source& src,
                      const std::string& path) {
  const auto& ops = calibrated_collectives();
  for (const auto& op : checked_entries(node, src, path)) {
    const std::string op_path = path + "." + op.key;
    if (std::find(ops.begin(), ops.end(), op.key) == ops.end())
      throw ConfigError(where(src, op_path, op.key_node) + ": " + op_path +
                        ": not a calibrated collective (known: allreduce, allgather, allgatherv, "
                        "broadcast, sendrecv)");
    if (!op.value.IsMap())
      throw ConfigError(where(src, op_path, op.value) + ": " + op_path +
                        ": expected a mapping of rank counts to {alpha, beta}, not " +
                        node_kind(op.value));
    for (const auto& p : op.value) {
      const YAML::Node key = p.first;
      const std::string text = key.IsScalar() ? key.Scalar() : "";
      const std::string p_path = op_path + "." + text;
      int world = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), world);
      if (r.ec != std::errc() || r.ptr != text.data() + text.size() || world < 2)
        throw ConfigError(where(src, p_path, key) + ": " + p_path +
                          ": the key must be a rank count P >= 2");
      if (!p.second["alpha"] || !p.second["beta"])
        throw ConfigError(where(src, p_path, p.second) + ": " + p_path +
                          ": 'alpha' and 'beta' are required");
      FitParams f;
      load_params(f, p.second, src, p_path, {"bands"});
      if (!out.collectives[op.key].emplace(world, AlphaBeta{f.alpha, f.beta}).second)
        throw ConfigError(where(src, p_path, key) + ": " + p_path + ": P given twice");
      if (p.second["bands"])
        out.size_bands[op.key][world] =
            load_bands(p.second["bands"], src, p_path + ".bands", op.key, world);
    }
  }
}

// 15 significant digits: what the configuration loader keeps of a number (config/params.h), so
// that a written profile reads back as the values it wrote.
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string read_network_profiles_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read the network profiles file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<NetworkProfile> load_network_profiles(const std::string& path) {
  return parse_network_profiles(read_network_profiles_text(path), path);
}

std::vector<NetworkProfile> parse_network_profiles(const std::string& text,
                                                   const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                      std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  Source src{path, {}};
  YAML::Node list = root["networks"];
  if (!list.IsSequence())
    throw ConfigError(where(src, "networks", root) +
                      ": networks: expected a list of {name, alpha, beta}");
  std::set<std::string> names;
  for (const auto& p : network_profiles()) names.insert(p.name);
  std::vector<NetworkProfile> out;
  for (const auto& item : list) {
    ProfileParams p;
    load_params(p, item, src, "networks[]", {"collectives"});
    if (p.name.empty() || !item["alpha"])
      throw ConfigError(where(src, "networks[]", item) +
                        ": networks[]: 'name' and 'alpha' are required");
    if (!item["beta"] == !item["bandwidth_gbps"])
      throw ConfigError(where(src, "networks[]", item) + ": networks[] '" + p.name +
                        "': give exactly one of beta and bandwidth_gbps");
    if (!names.insert(p.name).second)
      throw ConfigError(where(src, "networks[].name", item["name"]) + ": networks[]: the name '" +
                        p.name + "' is already a profile");
    NetworkProfile profile{p.name, p.alpha, item["beta"] ? p.beta : 8.0 / (p.bandwidth_gbps * 1e9)};
    profile.measured_on = p.measured_on;
    if (item["collectives"])
      load_collectives(profile, item["collectives"], src, "networks[" + p.name + "].collectives");
    out.push_back(profile);
  }
  return out;
}

std::vector<NetworkProfile> network_profiles_with(const std::string& path) {
  std::vector<NetworkProfile> all = network_profiles();
  if (!path.empty())
    for (auto& p : load_network_profiles(path)) all.push_back(p);
  return all;
}

NetworkProfile find_network_profile_in(const std::string& path, const std::string& name) {
  if (!path.empty())
    for (auto& p : load_network_profiles(path))
      if (p.name == name) return p;
  try {
    return find_network_profile(name);
  } catch (const std::invalid_argument& e) {
    if (path.empty()) throw;
    throw std::invalid_argument(std::string(e.what()) + ", nor in " + path);
  }
}

void write_network_profiles(const std::string& path, const std::vector<NetworkProfile>& profiles) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot write the network profiles file");
  out << "networks:\n";
  for (const auto& p : profiles) {
    out << "  - name: " << quoted(p.name) << "\n    alpha: " << number(p.alpha)
        << "\n    beta: " << number(p.beta) << "\n";
    if (!p.measured_on.empty()) out << "    measured_on: " << quoted(p.measured_on) << "\n";
    if (p.collectives.empty()) continue;
    out << "    collectives:\n";
    for (const auto& [op, fits] : p.collectives) {
      out << "      " << op << ":\n";
      for (const auto& [world, f] : fits) {
        out << "        " << world << ": {alpha: " << number(f.alpha)
            << ", beta: " << number(f.beta);
        const auto bands = p.size_bands.find(op);
        if (bands != p.size_bands.end() && bands->second.count(world)) {
          out << ", bands: [";
          const char* separator = "";
          for (const SizeBand& b : bands->second.at(world)) {
            out << separator << "{from_bytes: " << number(b.from_bytes)
                << ", alpha: " << number(b.fit.alpha) << ", beta: " << number(b.fit.beta) << "}";
            separator = ", ";
          }
          out << "]";
        }
        out << "}\n";
      }
    }
  }
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write the network profiles file");
}

}  // namespace cedar
