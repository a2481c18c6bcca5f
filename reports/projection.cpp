#include "reports/projection.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "comm/bus_bytes.h"
#include "comm/network_model.h"
#include "reports/byte_ratios.h"

namespace cedar {

CollectiveCost collective_cost(const CollectiveMix& mix, int workers, AllreduceScheme allreduce) {
  CollectiveCost c;
  const double p = double(workers);
  if (mix.op == "allreduce" && allreduce == AllreduceScheme::library) {
    c.latency_steps = mix.calls * double(allreduce_latency_steps(workers));
    c.bus_bytes = allreduce_busbw_factor(workers) * mix.payload_bytes;
  } else if (mix.op == "allreduce") {
    // The payload is the allreduce's size S on every rank; the terms are linear in S.
    const AllreduceTerms t =
        allreduce_terms(allreduce_scheme_for_level(allreduce, ""), workers, mix.payload_bytes);
    c.latency_steps = mix.calls * t.latency_steps;
    c.bus_bytes = t.bus_bytes;
  } else if (mix.op == "allgather" || mix.op == "allgatherv") {
    // Every rank receives the others' contributions: (P-1)/P of P * s. allgatherv's payload
    // already holds its 8-byte count, and it runs two allgathers (counts, then data).
    const double rounds = mix.op == "allgatherv" ? 2 : 1;
    c.latency_steps = rounds * mix.calls * double(allgather_latency_steps(workers));
    c.bus_bytes = allgather_busbw_factor(workers) * p * mix.payload_bytes;
  } else if (mix.op == "broadcast") {
    c.latency_steps = mix.calls * double(broadcast_latency_steps(workers));
    c.bus_bytes = workers > 1 ? mix.bus_bytes : 0;
  } else if (mix.op == "barrier") {
    c.latency_steps = mix.calls * double(allgather_latency_steps(workers));
  } else if (mix.op == "send" || mix.op == "sendrecv" || mix.op == "recv" || mix.op == "recv_any") {
    // Point to point: each send or sendrecv one message of its payload (a recv's bytes are its
    // sender's). How many messages a rank sends on other P depends on the exchange (gTop-k's
    // recursive doubling: log2 P), which the mix does not say: costed as measured.
    const bool sends = mix.op != "recv" && mix.op != "recv_any";
    c.latency_steps = sends ? mix.calls : 0;
    c.bus_bytes = sends && workers > 1 ? mix.payload_bytes : 0;
  } else {
    throw std::runtime_error("comm_totals: collective '" + mix.op +
                             "' has no cost rule (known: allreduce, allgather, allgatherv, "
                             "broadcast, barrier, send, sendrecv, recv, recv_any)");
  }
  return c;
}

double mean_message_bytes(const CollectiveMix& mix) {
  if (!(mix.calls > 0)) return 0;
  return (mix.op == "broadcast" ? mix.bus_bytes : mix.payload_bytes) / mix.calls;
}

int level_ranks_at(const RunMeasurement& m, const LevelMix& level, int workers) {
  if (level.name == "intra") return std::max(1, std::min(level.ranks, workers));
  const double scaled = double(level.ranks) * workers / double(std::max<int64_t>(1, m.world_size));
  return std::max(1, static_cast<int>(std::floor(scaled)));
}

CollectiveCost level_cost(const RunMeasurement& m, const LevelMix& level, int workers) {
  CollectiveCost total;
  const int n = level_ranks_at(m, level, workers);
  for (const auto& mix : level.collectives) {
    CollectiveCost c = collective_cost(mix, n, allreduce_scheme_for_level(m.allreduce, level.name));
    total.latency_steps += c.latency_steps;
    total.bus_bytes += c.bus_bytes;
  }
  return total;
}

CollectiveCost step_cost(const RunMeasurement& m, int workers) {
  CollectiveCost total;
  for (const auto& mix : m.collectives) {
    CollectiveCost c = collective_cost(mix, workers, m.allreduce);
    total.latency_steps += c.latency_steps;
    total.bus_bytes += c.bus_bytes;
  }
  for (const auto& level : m.levels) {
    CollectiveCost c = level_cost(m, level, workers);
    total.latency_steps += c.latency_steps;
    total.bus_bytes += c.bus_bytes;
  }
  return total;
}
const RunMeasurement* dense_baseline(const std::vector<RunMeasurement>& baselines,
                                     const RunMeasurement& m) {
  const RunMeasurement* best = nullptr;
  int best_score = -1;
  for (const auto& b : baselines) {
    if (b.algorithm != "dense" || !b.unusable.empty() || b.model != m.model ||
        b.dataset != m.dataset)
      continue;
    int score = (b.suite == m.suite ? 4 : 0) + (b.name == "dense" ? 2 : 0) +
                (b.world_size == m.world_size ? 1 : 0);
    if (score > best_score) best = &b, best_score = score;
  }
  return best;
}

int measured_workers(const RunMeasurement& m) { return static_cast<int>(m.world_size - m.servers); }

namespace {

// The servers' links carry every push and every reply: see the top of projection.h.
ProjectionPoint project_parameter_server(const RunMeasurement& m, int workers,
                                         const NetworkProfile& net) {
  ProjectionPoint pt;
  pt.workers = workers;
  pt.measured = workers == measured_workers(m);
  const double g = m.gradients_per_epoch;
  pt.steps_per_epoch = g / double(workers);  // rounds of one gradient per worker
  const double servers = double(m.servers);
  const double in = g * m.push_bytes_per_gradient / servers;
  const double out = g * m.pull_bytes_per_gradient / servers;
  pt.net_latency_steps = m.synchronous ? 4 * g : 2 * g;
  pt.net_bus_bytes = m.synchronous ? in + out : std::max(in, out);
  // Point to point: a calibrated profile's sendrecv fit at the nearest P of the workers.
  const AlphaBeta f = net.fit_for("sendrecv", workers);
  pt.comm_seconds = f.alpha * pt.net_latency_steps + f.beta * pt.net_bus_bytes;
  // The compute of one gradient (steps rows: a round's gradients are computed in parallel).
  pt.compute_seconds = m.compute_seconds_per_step * pt.steps_per_epoch;
  pt.total_seconds = pt.compute_seconds + pt.comm_seconds;
  pt.payload_compression = payload_compression(m.dense_payload_bytes, m.push_bytes_per_gradient);
  return pt;
}

// Seconds of `mixes` on `ranks` ranks, `steps` steps, on `profile`: each collective with its own
// fit where the profile is calibrated, the profile's alpha and beta on the summed terms
// otherwise (as the nominal profiles always have been).
double mix_seconds(const NetworkProfile& profile, const std::vector<CollectiveMix>& mixes,
                   int ranks, double steps, AllreduceScheme allreduce) {
  CollectiveCost sum;
  double seconds = 0;
  for (const auto& mix : mixes) {
    const CollectiveCost c = collective_cost(mix, ranks, allreduce);
    sum.latency_steps += c.latency_steps;
    sum.bus_bytes += c.bus_bytes;
    seconds += profile.cost(mix.op, ranks, c.latency_steps * steps, c.bus_bytes * steps,
                            mean_message_bytes(mix));
  }
  if (profile.collectives.empty())
    return profile.alpha * sum.latency_steps * steps + profile.beta * sum.bus_bytes * steps;
  return seconds;
}

const NetworkProfile& intra_profile_of(const RunMeasurement& m, const NetworkProfile* intra) {
  if (intra) return *intra;
  for (const auto& l : m.levels)
    if (l.name == "intra" && !l.profile.empty()) return find_network_profile(l.profile);
  return find_network_profile("shm");
}

}  // namespace

HostLayout host_layout_of(const RunMeasurement& m, const NetworkProfile* intra) {
  HostLayout h;
  for (const auto& l : m.levels)
    if (l.name == "intra") h.ranks_per_host = std::max(1, l.ranks);
  if (h.ranks_per_host > 1) h.intra = &intra_profile_of(m, intra);
  return h;
}

ProjectionPoint project_point(const RunMeasurement& m, int workers, const NetworkProfile& net,
                              const NetworkProfile* intra, const HostLayout& hosts) {
  if (workers < 1)
    throw std::invalid_argument("workers must be at least 1 (got " + std::to_string(workers) + ")");
  if (m.servers > 0) return project_parameter_server(m, workers, net);
  ProjectionPoint pt;
  pt.workers = workers;
  pt.measured = workers == m.world_size;
  pt.steps_per_epoch = double(m.steps_per_epoch) * double(m.world_size) / double(workers);
  const double spe = pt.steps_per_epoch;
  auto add_family = [&](const CollectiveMix& mix, const CollectiveCost& c) {
    if (mix.op == "allreduce")
      pt.allreduce_mb += c.bus_bytes / 1e6;
    else if (mix.op == "allgather" || mix.op == "allgatherv")
      pt.allgather_mb += c.bus_bytes / 1e6;
    else if (mix.op == "broadcast")
      pt.broadcast_mb += c.bus_bytes / 1e6;
  };
  CollectiveCost own;  // the run's own communicator
  double payload = 0;
  for (const auto& mix : m.collectives) {
    CollectiveCost c = collective_cost(mix, workers, m.allreduce);
    add_family(mix, c);
    own.latency_steps += c.latency_steps;
    own.bus_bytes += c.bus_bytes;
    payload += mix.payload_bytes;
  }
  // On one host a flat exchange never leaves it; on two or more the network bounds every round.
  double net_seconds = 0;  // on `net`, each collective with its own fit when calibrated
  if (hosts.ranks_per_host > 1 && workers <= hosts.ranks_per_host) {
    const NetworkProfile& host = hosts.intra ? *hosts.intra : find_network_profile("shm");
    pt.host_link_seconds += mix_seconds(host, m.collectives, workers, spe, m.allreduce);
  } else {
    pt.net_latency_steps += own.latency_steps * spe;
    pt.net_bus_bytes += own.bus_bytes * spe;
    net_seconds += mix_seconds(net, m.collectives, workers, spe, m.allreduce);
  }
  // Each level on its own profile: "intra" on the node's, the others between nodes on `net`.
  for (const auto& level : m.levels) {
    const int n = level_ranks_at(m, level, workers);
    const AllreduceScheme scheme = allreduce_scheme_for_level(m.allreduce, level.name);
    for (const auto& mix : level.collectives) {
      add_family(mix, collective_cost(mix, n, scheme));
      payload += mix.payload_bytes * mix.share;
    }
    const bool on_host = level.name == "intra";
    const NetworkProfile& profile = on_host ? intra_profile_of(m, intra) : net;
    const CollectiveCost c = level_cost(m, level, workers);
    LevelPoint lp{level.name, profile.name, n, c.bus_bytes / 1e6,
                  mix_seconds(profile, level.collectives, n, spe, scheme)};
    if (on_host) {
      pt.host_link_seconds += lp.comm_seconds;
    } else {
      pt.net_latency_steps += c.latency_steps * spe;
      pt.net_bus_bytes += c.bus_bytes * spe;
      net_seconds += lp.comm_seconds;
    }
    pt.levels.push_back(lp);
  }
  pt.comm_seconds = net.collectives.empty() ? net.alpha * pt.net_latency_steps +
                                                  net.beta * pt.net_bus_bytes + pt.host_link_seconds
                                            : net_seconds + pt.host_link_seconds;
  const CollectiveCost step = step_cost(m, workers);
  pt.payload_compression = payload_compression(m.dense_payload_bytes, payload);
  pt.wire_ratio = wire_ratio(m.dense_payload_bytes, step.bus_bytes, workers);
  pt.compute_seconds = m.compute_seconds_per_step * spe;
  pt.total_seconds = pt.compute_seconds + pt.comm_seconds;
  return pt;
}

std::vector<Projection> project_runs(const std::vector<RunMeasurement>& subjects,
                                     const std::vector<RunMeasurement>& baselines,
                                     const std::vector<int>& workers, const NetworkProfile& net,
                                     const NetworkProfile* intra) {
  const std::vector<RunMeasurement> dense_runs = average_seeds(baselines);
  std::vector<Projection> out;
  for (const auto& m : average_seeds(subjects)) {
    Projection p;
    p.basis = m;
    p.network = net.name;
    p.profile = net;
    const RunMeasurement* dense = dense_baseline(dense_runs, m);
    if (dense) p.dense_name = dense->name;
    std::vector<int> sizes = {measured_workers(m)};
    for (int w : workers)
      if (std::find(sizes.begin(), sizes.end(), w) == sizes.end()) sizes.push_back(w);
    const ProjectionPoint own = project_point(m, measured_workers(m), net, intra);
    const HostLayout hosts = host_layout_of(m, intra);
    for (int w : sizes) {
      ProjectionPoint pt = project_point(m, w, net, intra);
      if (pt.total_seconds > 0) {
        pt.speedup_vs_measured = own.total_seconds / pt.total_seconds;
        if (dense)
          pt.speedup_vs_dense =
              project_point(*dense, w, net, intra, hosts).total_seconds / pt.total_seconds;
      }
      p.points.push_back(pt);
    }
    out.push_back(p);
  }
  return out;
}
}  // namespace cedar
