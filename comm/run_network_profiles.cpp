#include "comm/run_network_profiles.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "comm/network_profile_file.h"

namespace cedar {

RunNetworkProfiles run_network_profiles(const ExperimentConfig& cfg) {
  const std::string& path = cfg.network.profiles;
  std::vector<NetworkProfile> from_file;
  if (!path.empty()) {
    try {
      from_file = load_network_profiles(path);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("network.profiles: ") + e.what());
    }
  }
  const auto named = [&](const std::string& key, const std::string& name) {
    for (const NetworkProfile& p : from_file)
      if (p.name == name) return p;
    try {
      return find_network_profile(name);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(key + ": " + e.what() + (path.empty() ? "" : ", nor in " + path));
    }
  };
  return {named("network.profile", cfg.network.profile),
          named("network.intra_profile", cfg.network.intra_profile)};
}

std::string network_profiles_note(const ExperimentConfig& cfg) {
  if (cfg.network.profiles.empty()) return "";
  std::ifstream in(cfg.network.profiles, std::ios::binary);
  if (!in)
    throw ConfigError("network.profiles: " + cfg.network.profiles + ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  std::string note = "# network.profiles: " + cfg.network.profiles + " held:\n";
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) note += "#   " + line + "\n";
  return note;
}

}  // namespace cedar
