// The dataset registry: one explicit table of names, each with its reader, default root,
// normalisation constants and default training augmentation.
//
//   cifar10 / cifar100  root default data/cifar10, data/cifar100; pad-4 random crop + flip.
//   mnist               root default /usr/share/datasets/mnist; no augmentation (digits are not
//                       flip-invariant).
//   fashion-mnist       root default /usr/share/datasets/fashion-mnist; mean 0.2860, std 0.3530;
//                       no augmentation by default: the usual Fashion-MNIST baselines train on the
//                       raw images, and it keeps runs comparable with published numbers.
//   imagenet-folder     root required (ImageFolder: root/train, root/val); image_size default 64;
//                       flip + pad-crop of image_size/8; ImageNet mean/std; decoded at load, or
//                       (lazy_decode) kept as files and decoded when read.
//   synthetic           3 channels, image_size default 32, num_classes default 10; train and test
//                       drawn from one generator (shared class patterns, independent noise); no
//                       augmentation (a flipped class pattern is not that class's pattern).
//   synthetic-regression, sign-counterexample
//                       feature vectors for the convex models (linear, logistic), one shard per
//                       worker (datasets/regression.h); trained full batch, the training set
//                       also being what is evaluated (the objective). The image sets carry only
//                       the shape: d channels of 1x1, count M·n, no pixels.
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment_config.h"
#include "datasets/loader.h"
#include "datasets/readers.h"
#include "datasets/regression.h"

namespace cedar {
namespace {

void keep_first(ImageSet& set, int64_t limit) {
  if (limit <= 0 || limit >= set.count) return;
  set.count = limit;
  if (set.in_memory()) set.pixels.resize(static_cast<size_t>(limit * set.image_bytes()));
  set.labels.resize(static_cast<size_t>(limit));
}

int64_t limited(int64_t count, int64_t limit) { return limit > 0 && limit < count ? limit : count; }

std::string root_or(const DatasetSpec& spec, const char* fallback) {
  return spec.root.empty() ? std::string(fallback) : spec.root;
}

std::string cifar_root(const DatasetSpec& spec, int classes) {
  return root_or(spec, classes == 10 ? "data/cifar10" : "data/cifar100");
}

LoadedDataset load_cifar(const DatasetSpec& spec, int classes) {
  LoadedDataset d;
  const std::string root = cifar_root(spec, classes);
  d.train = read_cifar(root, classes, true, spec.train_limit);
  d.test = read_cifar(root, classes, false, spec.test_limit);
  if (classes == 10)
    d.norm = {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  else
    d.norm = {{0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f}};
  d.train_aug = {4, true};
  return d;
}

constexpr const char* kMnistRoot = "/usr/share/datasets/mnist";
constexpr const char* kFashionMnistRoot = "/usr/share/datasets/fashion-mnist";

LoadedDataset load_mnist_like(const DatasetSpec& spec, const char* root, Normalization norm) {
  LoadedDataset d;
  d.train = read_mnist_dir(root_or(spec, root), true, spec.train_limit);
  d.test = read_mnist_dir(root_or(spec, root), false, spec.test_limit);
  d.norm = std::move(norm);
  d.train_aug = {};
  return d;
}

const char* const kNeedsRoot =
    "dataset 'imagenet-folder' needs a root (a folder holding train/<wnid>/*.JPEG and "
    "val/<wnid>/*.JPEG)";

int64_t folder_image_size(const DatasetSpec& spec) {
  return spec.image_size > 0 ? spec.image_size : 64;
}

// Labels are class folder positions: train and val must take the same folders.
std::string class_mismatch(const DatasetSpec& spec, const std::vector<std::string>& train,
                           const std::vector<std::string>& test) {
  if (train == test) return "";
  return "ImageFolder: the class folders of " + spec.root + "/train and " + spec.root +
         "/val differ (" + std::to_string(train.size()) + " vs " + std::to_string(test.size()) +
         " classes taken); labels would not match";
}

LoadedDataset load_imagenet_folder(const DatasetSpec& spec) {
  if (spec.root.empty()) throw std::invalid_argument(kNeedsRoot);
  const int64_t size = folder_image_size(spec);
  const auto read = spec.lazy_decode ? index_image_folder : read_image_folder;
  LoadedDataset d;
  d.train = read(spec.root, "train", spec.num_classes, spec.per_class, size);
  d.test = read(spec.root, "val", spec.num_classes, spec.per_class, size);
  const std::string mismatch = class_mismatch(spec, d.train.class_names, d.test.class_names);
  if (!mismatch.empty()) throw DataError(mismatch);
  keep_first(d.train, spec.train_limit);
  keep_first(d.test, spec.test_limit);
  d.norm = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  d.train_aug = {size / 8, true};
  return d;
}

LoadedDataset load_synthetic(const DatasetSpec& spec) {
  const int64_t size = spec.image_size > 0 ? spec.image_size : 32;
  const int64_t classes = spec.num_classes > 0 ? spec.num_classes : 10;
  if (spec.synthetic_train < 0 || spec.synthetic_test < 0)
    throw std::invalid_argument("dataset 'synthetic': synthetic_train/test must be >= 0");
  // One set split in two, so train and test share the class patterns but not the noise; only
  // the images each keeps are drawn.
  const int64_t train = limited(spec.synthetic_train, spec.train_limit);
  const int64_t test = limited(spec.synthetic_test, spec.test_limit);
  LoadedDataset d;
  d.train = make_synthetic_range(0, train, 3, size, classes, spec.seed);
  d.test = make_synthetic_range(spec.synthetic_train, spec.synthetic_train + test, 3, size, classes,
                                spec.seed);
  d.norm = {{0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}};
  d.train_aug = {};
  return d;
}

// A regression set's shape as image sets: d channels of 1x1 pixels (none stored), M·n samples.
ImageSetShape regression_shape(int64_t count, int64_t dim, const std::string& task) {
  return {count, dim, 1, 1, task == "logistic" ? 2 : 1, {}};
}

ImageSet shape_only(const ImageSetShape& shape) {
  ImageSet set;
  set.count = shape.count;
  set.channels = shape.channels;
  set.height = shape.height;
  set.width = shape.width;
  set.num_classes = shape.num_classes;
  return set;
}

LoadedDataset wrap_regression(RegressionSet set) {
  LoadedDataset d;
  const ImageSetShape shape = regression_shape(set.features.size(0), set.dim(), set.task);
  d.train = shape_only(shape);
  d.test = shape_only(shape);
  d.regression = std::make_shared<const RegressionSet>(std::move(set));
  return d;
}

LoadedDataset load_synthetic_regression(const DatasetSpec& spec) {
  return wrap_regression(
      make_increasing_smoothness(spec.shards, spec.features, spec.growth, spec.task, spec.seed));
}

LoadedDataset load_sign_counterexample(const DatasetSpec& spec) {
  return wrap_regression(make_sign_counterexample(spec.shards, spec.features, spec.seed));
}

DatasetProbe probe_regression(const DatasetSpec& spec) {
  const bool sign = spec.name == "sign-counterexample";
  const std::string task = sign ? "linear" : spec.task;
  DatasetProbe p;
  p.train = p.test = regression_shape(spec.shards * spec.features, spec.features, task);
  return p;
}

// The probes: what each loader above would load, from the readers' probes.
DatasetProbe probe_pair(ProbeResult train, ProbeResult test) {
  DatasetProbe p;
  p.train = std::move(train.shape);
  p.test = std::move(test.shape);
  p.problems = std::move(train.problems);
  p.problems.insert(p.problems.end(), test.problems.begin(), test.problems.end());
  return p;
}

DatasetProbe probe_imagenet_folder(const DatasetSpec& spec) {
  if (spec.root.empty()) return {{}, {}, {kNeedsRoot}};
  const int64_t size = folder_image_size(spec);
  DatasetProbe p =
      probe_pair(probe_image_folder(spec.root, "train", spec.num_classes, spec.per_class, size),
                 probe_image_folder(spec.root, "val", spec.num_classes, spec.per_class, size));
  if (!p.ok()) return p;
  const std::string mismatch = class_mismatch(spec, p.train.class_names, p.test.class_names);
  if (!mismatch.empty()) p.problems.push_back(mismatch);
  p.train.count = limited(p.train.count, spec.train_limit);
  p.test.count = limited(p.test.count, spec.test_limit);
  return p;
}

DatasetProbe probe_mnist_like(const DatasetSpec& spec, const char* root) {
  return probe_pair(probe_mnist_dir(root_or(spec, root), true, spec.train_limit),
                    probe_mnist_dir(root_or(spec, root), false, spec.test_limit));
}

DatasetProbe probe_synthetic(const DatasetSpec& spec) {
  if (spec.synthetic_train < 0 || spec.synthetic_test < 0)
    return {{}, {}, {"dataset 'synthetic': synthetic_train/test must be >= 0"}};
  const int64_t size = spec.image_size > 0 ? spec.image_size : 32;
  const int64_t classes = spec.num_classes > 0 ? spec.num_classes : 10;
  DatasetProbe p;
  p.train = {limited(spec.synthetic_train, spec.train_limit), 3, size, size, classes, {}};
  p.test = {limited(spec.synthetic_test, spec.test_limit), 3, size, size, classes, {}};
  return p;
}

struct Entry {
  DatasetInfo info;
  std::function<LoadedDataset(const DatasetSpec&)> load;
  std::function<DatasetProbe(const DatasetSpec&)> probe;
};

// The explicit, ordered list of datasets.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"cifar10", "CIFAR-10 binary batches (32x32 RGB, 10 classes); root default data/cifar10"},
       [](const DatasetSpec& s) { return load_cifar(s, 10); },
       [](const DatasetSpec& s) {
         return probe_pair(probe_cifar(cifar_root(s, 10), 10, true, s.train_limit),
                           probe_cifar(cifar_root(s, 10), 10, false, s.test_limit));
       }},
      {{"cifar100", "CIFAR-100 binary (32x32 RGB, 100 fine classes); root default data/cifar100"},
       [](const DatasetSpec& s) { return load_cifar(s, 100); },
       [](const DatasetSpec& s) {
         return probe_pair(probe_cifar(cifar_root(s, 100), 100, true, s.train_limit),
                           probe_cifar(cifar_root(s, 100), 100, false, s.test_limit));
       }},
      {{"mnist",
        "MNIST IDX files (28x28 grey, 10 classes); root default /usr/share/datasets/mnist"},
       [](const DatasetSpec& s) {
         return load_mnist_like(s, kMnistRoot, {{0.1307f}, {0.3081f}});
       },
       [](const DatasetSpec& s) { return probe_mnist_like(s, kMnistRoot); }},
      {{"fashion-mnist",
        "Fashion-MNIST IDX files (28x28 grey, 10 classes); root default "
        "/usr/share/datasets/fashion-mnist"},
       [](const DatasetSpec& s) {
         return load_mnist_like(s, kFashionMnistRoot, {{0.2860f}, {0.3530f}});
       },
       [](const DatasetSpec& s) { return probe_mnist_like(s, kFashionMnistRoot); }},
      {{"imagenet-folder",
        "ImageNet subset in ImageFolder layout (root/train, root/val; JPEG), resized to "
        "image_size (default 64); num_classes / per_class select a subset"},
       load_imagenet_folder,
       probe_imagenet_folder},
      {{"synthetic",
        "deterministic learnable class patterns plus noise (3 x image_size^2, "
        "default 32, num_classes default 10)"},
       load_synthetic,
       probe_synthetic},
      {{"synthetic-regression",
        "LAG's synthetic regression (Chen et al. 2018): shards of features x features rows "
        "I + growth^(m-1) q_m q_m^T, smoothness growing with m; task linear or logistic"},
       load_synthetic_regression,
       probe_regression},
      {{"sign-counterexample",
        "least squares where majority-vote signSGD stops short of the optimum (a majority of "
        "shards with targets b+1, the rest b-10); error feedback converges"},
       load_sign_counterexample,
       probe_regression},
  };
  return kEntries;
}

// The entry of spec.name, after checking the spec's sizes; throws std::invalid_argument.
const Entry& find_entry(const DatasetSpec& spec) {
  if (spec.train_limit < 0 || spec.test_limit < 0 || spec.num_classes < 0 || spec.per_class < 0 ||
      spec.image_size < 0)
    throw std::invalid_argument("dataset '" + spec.name +
                                "': train_limit, test_limit, num_classes, per_class and "
                                "image_size must be >= 0");
  if (spec.lazy_decode && spec.name != "imagenet-folder")
    throw std::invalid_argument("dataset '" + spec.name +
                                "': lazy decoding is for imagenet-folder only (its images are "
                                "files); the other readers keep their images in memory");
  for (const auto& e : entries())
    if (e.info.name == spec.name) return e;
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  throw std::invalid_argument("unknown dataset '" + spec.name + "'; known: " + known);
}

}  // namespace

const std::vector<DatasetInfo>& dataset_catalog() {
  static const std::vector<DatasetInfo> kCatalog = [] {
    std::vector<DatasetInfo> out;
    for (const auto& e : entries()) out.push_back(e.info);
    return out;
  }();
  return kCatalog;
}

LoadedDataset load_dataset(const DatasetSpec& spec) {
  const Entry& e = find_entry(spec);
  LoadedDataset d = e.load(spec);
  d.train.name = spec.name + "/train";
  d.test.name = spec.name + "/test";
  if (!spec.augment) d.train_aug = {};
  return d;
}

DatasetSpec dataset_spec(const ExperimentConfig& cfg) {
  DatasetSpec ds;
  ds.name = cfg.data.name;
  ds.root = cfg.data.root;
  ds.train_limit = cfg.data.train_limit;
  ds.test_limit = cfg.data.test_limit;
  ds.augment = cfg.data.augment;
  ds.num_classes = cfg.data.num_classes;
  ds.per_class = cfg.data.per_class;
  if (cfg.data.image_size > 0) ds.image_size = cfg.data.image_size;
  ds.lazy_decode = cfg.data.decode == "lazy";
  ds.seed = cfg.train.seed;
  ds.task = cfg.data.task;
  ds.shards = cfg.data.shards;
  ds.features = cfg.data.features;
  ds.growth = cfg.data.growth;
  return ds;
}

DatasetProbe probe_dataset(const DatasetSpec& spec) {
  try {
    return find_entry(spec).probe(spec);
  } catch (const std::exception& e) {  // a bad spec, or a reader's argument check
    return {{}, {}, {e.what()}};
  }
}

}  // namespace cedar
