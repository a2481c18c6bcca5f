#pragma once
// Network profiles from a YAML file, besides the built-in five (network_model.h):
//   networks:
//     - {name: campus-wan, alpha: 1.0e-3, bandwidth_gbps: 0.1}   # alpha in seconds per message
//     - {name: nvlink, alpha: 2.0e-6, beta: 3.3e-12}              # beta in seconds per byte
//     - name: vc-1gbit                                            # `cedar network calibrate`
//       alpha: 5.0e-5          # the default for any op not listed below
//       beta: 8.0e-9
//       measured_on: "virtual cluster 2x1, tbf 1gbit"               # free text, optional
//       collectives:           # per op, per rank count P: the fit there
//         allreduce: {2: {alpha: 4.1e-5, beta: 8.3e-9}, 4: {alpha: 4.4e-5, beta: 8.6e-9}}
//         sendrecv: {2: {alpha: 3.0e-5, beta: 8.1e-9}}
//         allgather:           # a fit with size bands (`cedar network fit --bands 1MiB`):
//           4: {alpha: 5.0e-5, beta: 9.0e-9, bands: [{from_bytes: 0, alpha: 4.0e-5, beta: 8.5e-9},
//                                                    {from_bytes: 1048576, alpha: 0,
//                                                    beta: 1.1e-8}]}
// Each entry gives alpha and exactly one of beta or bandwidth_gbps (10^9 bits per second).
// collectives' ops are allreduce, allgather, allgatherv, broadcast and sendrecv; P ≥ 2; each fit
// gives alpha ≥ 0 and beta ≥ 0; bands start at 0 and increase (network_model.h says which band a
// message takes). A file without measured_on and collectives reads as before.
// No LibTorch here.
#include <string>
#include <vector>

#include "comm/network_model.h"

namespace cedar {

// Throws ConfigError naming file:line:column and the key for a malformed entry, a name that
// repeats one in the file or a built-in one, or a missing file.
std::vector<NetworkProfile> load_network_profiles(const std::string& path);

// The file's whole text. Throws ConfigError naming it when it cannot be read.
std::string read_network_profiles_text(const std::string& path);

// The same as load_network_profiles from the file's text, already read; `path` names it in errors.
std::vector<NetworkProfile> parse_network_profiles(const std::string& text,
                                                   const std::string& path);

// The built-in profiles followed by those of `path` (none when empty).
std::vector<NetworkProfile> network_profiles_with(const std::string& path);

// The profile `name` among the built-in ones and those of `path` (none when empty). Throws
// std::invalid_argument naming the known profiles when there is none.
NetworkProfile find_network_profile_in(const std::string& path, const std::string& name);

// Writes `profiles` in the format above, every number to the 15 significant digits the loader
// keeps of it (so writing what was read writes the same file). Throws std::runtime_error when the
// file cannot be written.
void write_network_profiles(const std::string& path, const std::vector<NetworkProfile>& profiles);

}  // namespace cedar
