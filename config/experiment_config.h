#pragma once
// The experiment configuration: one run's model, data, training, optimizer and algorithm.
// Every default lives in the visit() lists below; `cedar list` prints them.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/known_names.h"
#include "config/params.h"

namespace cedar {

struct ModelConfig {
  std::string name = "resnet20";
  bool small_input = false;
  double l2 = 0;
  template <class V>
  void visit(V& v) {
    v("name", name, "model name (cedar list shows them)");
    v("small_input", small_input, "ImageNet ResNets: 3x3 stride-1 stem without max-pool");
    v("l2", l2,
      "logistic: weight lambda of (lambda/2)||theta||^2 added to the mean loss (part of the "
      "objective and of its optimum f*)",
      at_least(0));
  }
};

struct DataConfig {
  std::string name = "fashion-mnist";
  std::string root = "";
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  bool augment = true;
  int64_t num_classes = 0;
  int64_t per_class = 0;
  int64_t image_size = 0;
  int64_t prefetch = 2;
  int64_t workers = 1;
  std::string decode = "eager";
  std::string task = "linear";
  int64_t shards = 9;
  int64_t features = 50;
  double growth = 1.3;
  template <class V>
  void visit(V& v) {
    v("name", name, "dataset name (cedar list shows them)");
    v("root", root, "folder holding the dataset files (empty: the dataset's default)");
    v("train_limit", train_limit, "use the first N training images (0: all)", at_least(0));
    v("test_limit", test_limit, "use the first N test images (0: all)", at_least(0));
    v("augment", augment, "standard augmentation of training images");
    v("num_classes", num_classes, "imagenet-folder / synthetic: classes (0: all / default)",
      at_least(0));
    v("per_class", per_class, "imagenet-folder: images per class (0: all)", at_least(0));
    v("image_size", image_size, "imagenet-folder / synthetic: side length (0: default)",
      at_least(0));
    v("prefetch", prefetch,
      "training batches prepared ahead of the step on background threads, augmentation and "
      "normalisation included; the batches are bitwise those of 0 (prepared by the step itself)",
      in_range(0, 64));
    v("workers", workers, "threads preparing the batches ahead when prefetch > 0", in_range(1, 64));
    v("decode", decode,
      "imagenet-folder: eager (decode every image at load and keep its pixels) or lazy (keep "
      "the file paths; decode each batch's images as it is prepared, for subsets larger than "
      "memory)",
      one_of({"eager", "lazy"}));
    v("task", task,
      "synthetic-regression: linear (Gaussian targets, model linear) or logistic (targets +-1, "
      "model logistic)",
      one_of({"linear", "logistic"}));
    v("shards", shards,
      "synthetic-regression / sign-counterexample: M shards, one per rank (train.full_batch)",
      in_range(1, 4096));
    v("features", features,
      "synthetic-regression / sign-counterexample: d features, also the samples per shard",
      in_range(1, 4096));
    v("growth", growth,
      "synthetic-regression: shard m's rows are I + growth^(m-1) q_m q_m^T (LAG: 1.3)",
      greater_than(0));
  }
};

struct TrainConfig {
  int64_t epochs = 1;
  int64_t batch_size = 128;
  int64_t max_steps = 0;
  int64_t eval_every_steps = 0;
  int64_t evals_per_epoch = 1;
  int64_t threads = 0;
  uint64_t seed = 1;
  double target_accuracy = 0;
  double bucket_mb = 25;
  std::string fusion = "size";
  bool overlap = false;
  std::string schedule = "fifo";
  double slice_kb = 4000;
  std::string device = "cpu";
  std::string backend = "auto";
  std::string amp = "off";
  bool checkpoint = true;
  int64_t checkpoint_every_steps = 0;
  std::string checkpoint_dir = "";
  bool full_batch = false;
  double target_gap = 0;
  std::string trace = "";
  std::string trace_steps = "10-14";
  template <class V>
  void visit(V& v) {
    v("epochs", epochs, "training epochs", at_least(1));
    v("batch_size", batch_size, "images per worker per step", at_least(1));
    v("max_steps", max_steps, "stop after this many steps (0: no limit)", at_least(0));
    v("eval_every_steps", eval_every_steps, "also evaluate every N steps (0: once per epoch)",
      at_least(0));
    v("evals_per_epoch", evals_per_epoch,
      "test-set evaluations per epoch, evenly spaced by steps, the last at the epoch's end (at "
      "most one per step; each is a row of the results' evals table, a point of the plots)",
      at_least(1));
    v("threads", threads, "intra-op threads per rank (0: cores / ranks on this node)", at_least(0));
    v("seed", seed, "seed for initialisation, data order and stochastic compressors");
    v("target_accuracy", target_accuracy, "stop once test accuracy reaches this (0: off)",
      in_range(0, 1));
    v("bucket_mb", bucket_mb, "gradient fusion bucket size in MiB", greater_than(0));
    // At size (fixed buckets, the default) not in the resolved configuration: runs from before
    // the key keep their fingerprint.
    v("fusion", fusion,
      "how gradients are grouped into buckets: size (buckets of bucket_mb), or from the network "
      "model (docs/configuration.md, Gradient fusion) on backward's gradient times, timed on rank "
      "0 before the first step, and one allreduce's alpha-beta cost on network.profile and "
      "network.allreduce: mgwfbp (MG-WFBP's merge rule, Shi et al. 2019), optimal (the grouping "
      "of least predicted time) or auto (the bucket size of least predicted time among 1, 2, 4, "
      "..., 64 MiB and bucket_mb); the buckets go into the log, the run's provenance and its "
      "checkpoints",
      unrecorded_at("size", one_of({"size", "mgwfbp", "optimal", "auto"})));
    v("overlap", overlap,
      "exchange each bucket during backward, as soon as its gradients are ready");
    v("schedule", schedule,
      "order of the exchanges overlapping backward (train.overlap): fifo (whole buckets in the "
      "order backward fills them) or priority (slices of slice_kb, the first layers' first among "
      "those ready on every rank, agreed before each slice: P3, ByteScheduler; elementwise "
      "algorithms only)",
      unrecorded_at("fifo", one_of({"fifo", "priority"})));
    v("slice_kb", slice_kb,
      "schedule priority: slice size in kB (1000 bytes) of fp32 gradients; 4000 = ByteScheduler's "
      "default partition (1,000,000 parameters), 160 = P3's released code's slice (40,000)",
      unrecorded_at(4000.0, at_least(0.004)));
    v("device", device,
      "where tensors live: cpu, cuda (the local rank's GPU: local rank mod GPUs) or auto (cuda "
      "where a GPU is visible)",
      one_of({"cpu", "cuda", "auto"}));
    v("backend", backend,
      "the algorithm's communicator: nccl (CUDA tensors, one GPU per rank), mpi (CPU or CUDA "
      "tensors; CUDA ones through host memory unless MPI is CUDA-aware; ranks may share a GPU) or "
      "auto (nccl on a GPU, else mpi)",
      one_of({"auto", "mpi", "nccl"}));
    v("amp", amp,
      "automatic mixed precision: off, bf16 or fp16 (forward pass and loss under LibTorch's "
      "autocast, also in evaluation; fp16 adds GradScaler's dynamic loss scaling)",
      one_of({"off", "bf16", "fp16"}));
    v("checkpoint", checkpoint, "write checkpoints that `cedar run --resume` continues from");
    v("checkpoint_every_steps", checkpoint_every_steps,
      "also checkpoint every N steps within an epoch (0: at the end of each epoch only)",
      at_least(0));
    v("checkpoint_dir", checkpoint_dir,
      "checkpoint folder (empty: <db>.checkpoints/run-<id> beside the results database)");
    v("full_batch", full_batch,
      "regression data sets: every step of rank r uses its whole shard r (full gradients, one "
      "step per epoch); records the optimality gap f(theta_k) - f* of each step (step stat 'gap')");
    v("target_gap", target_gap,
      "full_batch: stop after the first step whose gap is at most this (0: off); that step "
      "records the step stat 'gap_reached'",
      at_least(0));
    // Where output goes, not what runs: no part of the run's fingerprint.
    v("trace", trace,
      "write a timeline of trace_steps (forward, backward, each bucket's exchange, optimizer; "
      "Chrome trace JSON for Perfetto or chrome://tracing) to this file, one per rank with "
      "'.rankR' before the extension when there are several ranks; `cedar trace summary` reads "
      "it (empty: off)",
      output_only());
    v("trace_steps", trace_steps,
      "steps the trace records: FIRST-LAST (both included) or N, counted from 0 as in the steps "
      "table",
      output_only());
  }
};

struct OptimizerConfig {
  std::string name = "sgd";
  double lr = 0.1;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 5e-4;
  std::string schedule = "cosine";
  std::vector<double> milestones = {};
  double gamma = 0.1;
  double warmup_epochs = 0;
  double warmup_start_factor = 0.1;
  std::string lr_scaling = "none";
  int64_t base_batch = 128;
  double trust_coefficient = 0.001;
  double lars_eps = 0;
  bool exclude_bn_bias = true;
  double poly_power = 2;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  template <class V>
  void visit(V& v) {
    v("name", name,
      "optimizer: sgd (torch.optim.SGD), lars (You et al. 2017), adam (Kingma & Ba 2015, "
      "torch.optim.Adam: weight decay added to the gradient) or adamw (Loshchilov & Hutter 2019, "
      "torch.optim.AdamW: weight decay applied to the weights)",
      one_of({"sgd", "lars", "adam", "adamw"}));
    v("lr", lr, "base learning rate", greater_than(0));
    v("momentum", momentum, "momentum factor", in_range(0, 1, true));
    v("nesterov", nesterov, "Nesterov momentum");
    v("weight_decay", weight_decay, "L2 weight decay", at_least(0));
    v("schedule", schedule, "learning-rate schedule (poly: (1-t)^poly_power after warm-up)",
      one_of({"constant", "step", "cosine", "poly"}));
    v("milestones", milestones, "step schedule: epochs at which lr is multiplied by gamma",
      at_least(0));
    v("gamma", gamma, "step schedule: decay factor", in_range(0, 1));
    v("warmup_epochs", warmup_epochs, "linear warm-up length in epochs", at_least(0));
    v("warmup_start_factor", warmup_start_factor, "warm-up starts at lr * this", in_range(0, 1));
    v("lr_scaling", lr_scaling, "large-batch rule: lr *= (world*batch/base_batch) or its sqrt",
      one_of({"none", "linear", "sqrt"}));
    v("base_batch", base_batch, "global batch the base lr was tuned for", at_least(1));
    v("trust_coefficient", trust_coefficient, "lars: trust coefficient eta (You et al.: 0.001)",
      greater_than(0));
    v("lars_eps", lars_eps, "lars: added to the local-rate denominator (0: the paper's formula)",
      at_least(0));
    v("exclude_bn_bias", exclude_bn_bias,
      "lars: 1-D (batch-norm, bias) parameters skip the "
      "layer-wise rate and weight decay");
    v("poly_power", poly_power, "poly schedule: decay power (You et al.: 2)", greater_than(0));
    v("beta1", beta1, "adam, adamw: decay of the first moment", in_range(0, 1, true));
    v("beta2", beta2, "adam, adamw: decay of the second moment", in_range(0, 1, true));
    v("eps", eps, "adam, adamw: added to the second moment's square root", greater_than(0));
  }
};

struct NetworkConfig {
  std::string profile = "10gbe";
  std::string profiles;
  bool emulate = false;
  int ranks_per_node = 0;
  std::string intra_profile = "shm";
  std::string allreduce = "library";
  std::string cluster = "none";
  double collective_timeout_s = 300;
  template <class V>
  void visit(V& v) {
    v("profile", profile,
      "network profile for modeled communication time (between nodes, where an exchange has "
      "levels): 1gbe, 10gbe, 25gbe, 100gbe, ib-hdr, or one of network.profiles'");
    v("profiles", profiles,
      "YAML file of network profiles (the format `cedar network calibrate` writes: alpha and "
      "beta fitted per collective and rank count) whose names profile and intra_profile may take "
      "besides the built-in ones; what it holds is recorded with the run and is part of its "
      "fingerprint",
      unrecorded_at(""));
    v("emulate", emulate, "sleep so that each step's communication takes the modeled time");
    v("ranks_per_node", ranks_per_node,
      "ranks sharing one node, consecutive ranks forming a node (hierarchical exchanges); 0: as "
      "the launcher says (Open MPI's or Slurm's count of ranks on this node), N: emulate nodes of "
      "N ranks on one machine",
      at_least(0));
    v("intra_profile", intra_profile,
      "network profile of the traffic inside a node (level 'intra' of hierarchical exchanges): "
      "shm, nvlink, or one of profile's");
    v("allreduce", allreduce,
      "how the algorithm's allreduces run: library (the MPI or NCCL library's own), or over "
      "point-to-point messages: ring (reduce-scatter and allgather, 2(P-1) steps), "
      "halving_doubling (Rabenseifner's recursive halving and doubling, 2 log2 P steps), tree "
      "(binary-tree reduce to rank 0 and broadcast back) or two_level (tree inside each node of "
      "ranks_per_node ranks, ring among the nodes' first ranks); bytes and latency steps are "
      "counted per message sent, and `cedar project` costs the scheme the run used",
      unrecorded_at("library", one_of(known_allreduce_scheme_names())));
    v("cluster", cluster,
      "where `cedar suite` starts the ranks: none (mpirun on this machine) or virtual (on the "
      "hosts of `cedar cluster up`, ranks_per_host consecutive ranks per host, shared memory "
      "inside a host and TCP over links shaped to its rate between hosts; the hosts, rate and "
      "burst go into the run's provenance)",
      one_of({"none", "virtual"}));
    v("collective_timeout_s", collective_timeout_s,
      "seconds one blocking operation (a collective, a message, the harness's step agreement) "
      "may take before the run is marked failed, naming the operation, its bytes, the step and "
      "the rank, and every rank ends, instead of waiting on a dead link; 0: no limit",
      at_least(0));
  }
  // intra_profile's built-in choices: the node-local profiles and every network profile.
  static std::vector<std::string> intra_profile_choices() {
    std::vector<std::string> names = known_intra_profile_names();
    for (const auto& n : known_network_profile_names()) names.push_back(n);
    return names;
  }
};

// Where results go, not what runs: not part of the resolved configuration or its fingerprint.
struct ResultsConfig {
  std::string mode = "auto";
  template <class V>
  void visit(V& v) {
    v("mode", mode,
      "how runs write the results database: wal (SQLite WAL, every process on one host), shards "
      "(one file per run, merged by `cedar merge`; safe on NFS, Lustre, GPFS) or auto (wal on a "
      "local filesystem, shards on a shared one)",
      one_of({"auto", "wal", "shards"}));
  }
};

struct ExperimentConfig {
  std::string name = "run";
  std::string suite = "";
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  OptimizerConfig optimizer;
  NetworkConfig network;
  ResultsConfig results;
  std::string algorithm = "dense";
  YAML::Node algorithm_params;  // the algorithm's own keys, parsed by its plugin
  Source source;

  template <class V>
  void visit_top(V& v) {
    v("name", name, "run name");
    v("suite", suite, "suite the run belongs to");
  }
};

// Loads one experiment from a YAML file, after applying `--set key=value` overrides (dotted keys,
// values parsed as YAML scalars). Throws ConfigError naming file:line:column and the key.
ExperimentConfig load_experiment(const std::string& path,
                                 const std::vector<std::string>& overrides = {});
ExperimentConfig parse_experiment(const YAML::Node& root, Source source);
// Applies one "a.b.c=value" override to a YAML tree; records the key in `source`.
void apply_override(YAML::Node& root, const std::string& assignment, Source& source);

// The resolved configuration (every default filled in) as YAML; `algorithm_yaml` is the
// algorithm's resolved parameters (from its plugin).
std::string resolved_yaml(const ExperimentConfig& c, const std::string& algorithm_yaml);

}  // namespace cedar
