#include "comm/run_network_profiles.h"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "comm/network_profile_file.h"

namespace cedar {

namespace {

std::string note_of(const std::string& path, const std::string& text) {
  std::string note = "# network.profiles: " + path + " held:\n";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) note += "#   " + line + "\n";
  return note;
}

}  // namespace

RunNetworkProfiles run_network_profiles(const ExperimentConfig& cfg) {
  const std::string& path = cfg.network.profiles;
  std::vector<NetworkProfile> from_file;
  std::string note;
  if (!path.empty()) {
    try {
      const std::string text = read_network_profiles_text(path);
      from_file = parse_network_profiles(text, path);
      note = note_of(path, text);
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
          named("network.intra_profile", cfg.network.intra_profile), note};
}

}  // namespace cedar
