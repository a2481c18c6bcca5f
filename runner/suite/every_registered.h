#pragma once
// A grid's `algorithm:` as one mapping instead of a list (suite.h):
//   algorithm:
//     every: registered
//     settings:                       # optional: an entry's keys, by algorithm name
//       dgc: {warmup_epochs: 1}
//       randomk: {ratio: 0.01, set: {optimizer.lr: 0.005}}
// stands for one list entry per registered algorithm that exchanges gradients, in catalog order
// (algorithms/algorithm_list.h): the algorithm's keys from `settings` beside its name (`set:` and
// `label:` as in a list entry), or its bare name where it has no settings entry or an empty one
// (`qsgd: {}  # 4 bits`: a place for a comment on its defaults). A name in `settings` that `every`
// does not cover is an error naming the key and its file:line:col. No LibTorch here: the caller
// passes the registered names.
#include <string>
#include <vector>

#include "config/params.h"

namespace cedar {

// One entry of the list the mapping stands for.
struct ImpliedAlgorithmEntry {
  std::string name;     // the registered algorithm
  YAML::Node settings;  // its mapping under `settings` (undefined: none)
  YAML::Node place;     // the node messages about the entry point at
  std::string path;     // its dotted key for messages, e.g. grid.algorithm.settings.dgc
};

// The entries of `every` mapping `node` (grid.algorithm) over `registered`, in that order.
// Throws ConfigError naming file:line:col for an unknown key, an `every` other than
// `registered`, a settings entry that is not a mapping or names no covered algorithm, or a
// settings entry with its own `name`.
std::vector<ImpliedAlgorithmEntry> every_registered_entries(
    const YAML::Node& node, const Source& src, const std::vector<std::string>& registered);

}  // namespace cedar
