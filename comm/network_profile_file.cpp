#include "comm/network_profile_file.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "config/params.h"

namespace cedar {
namespace {

struct ProfileParams {
  std::string name;
  double alpha = 0, beta = 0, bandwidth_gbps = 0;
  template <class V>
  void visit(V& v) {
    v("name", name, "profile name");
    v("alpha", alpha, "latency per message, seconds", at_least(0));
    v("beta", beta, "seconds per byte", greater_than(0));
    v("bandwidth_gbps", bandwidth_gbps, "line rate in 10^9 bits per second", greater_than(0));
  }
};

}  // namespace

std::vector<NetworkProfile> load_network_profiles(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(path + ": cannot read the network profiles file");
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
    load_params(p, item, src, "networks[]");
    if (p.name.empty() || !item["alpha"])
      throw ConfigError(where(src, "networks[]", item) +
                        ": networks[]: 'name' and 'alpha' are required");
    if (!item["beta"] == !item["bandwidth_gbps"])
      throw ConfigError(where(src, "networks[]", item) + ": networks[] '" + p.name +
                        "': give exactly one of beta and bandwidth_gbps");
    if (!names.insert(p.name).second)
      throw ConfigError(where(src, "networks[].name", item["name"]) + ": networks[]: the name '" +
                        p.name + "' is already a profile");
    out.push_back({p.name, p.alpha, item["beta"] ? p.beta : 8.0 / (p.bandwidth_gbps * 1e9)});
  }
  return out;
}

}  // namespace cedar
