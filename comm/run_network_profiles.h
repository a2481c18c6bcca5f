#pragma once
// The network profiles a run models and emulates its traffic on: network.profile between nodes and
// network.intra_profile inside one, each a built-in profile (comm/network_model.h) or, with
// network.profiles: FILE, one of that file's (the format of comm/network_profile_file.h, which
// `cedar network calibrate` writes: α and β fitted on the fabric, per collective and rank count).
// The file is read once where a run starts (and where a suite checks its runs): the profiles the
// run uses and the text its record keeps come from that one read, so the run's recorded
// configuration, and its fingerprint, hold what the run used.
#include <string>

#include "comm/network_model.h"
#include "config/experiment_config.h"

namespace cedar {

struct RunNetworkProfiles {
  NetworkProfile inter;  // network.profile
  NetworkProfile intra;  // network.intra_profile
  // What the run's recorded configuration adds for network.profiles: the file's text as YAML
  // comment lines after a line naming it, so that a changed file changes the fingerprint and the
  // record shows the α and β the run used. "" without the key.
  std::string note;
};

// Throws ConfigError naming the key (and network.profiles' file) when a name is neither built in
// nor in the file, or the file is missing or malformed.
RunNetworkProfiles run_network_profiles(const ExperimentConfig& cfg);

}  // namespace cedar
