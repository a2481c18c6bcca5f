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
//                       flip + pad-crop of image_size/8; ImageNet mean/std.
//   synthetic           3 channels, image_size default 32, num_classes default 10; train and test
//                       drawn from one generator (shared class patterns, independent noise); no
//                       augmentation (a flipped class pattern is not that class's pattern).
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "datasets/loader.h"
#include "datasets/readers.h"

namespace cedar {
namespace {

void keep_first(ImageSet& set, int64_t limit) {
  if (limit <= 0 || limit >= set.count) return;
  set.count = limit;
  set.pixels.resize(static_cast<size_t>(limit * set.image_bytes()));
  set.labels.resize(static_cast<size_t>(limit));
}

// Images [begin, end) of `set`.
ImageSet slice(const ImageSet& set, int64_t begin, int64_t end) {
  ImageSet out;
  out.name = set.name;
  out.count = end - begin;
  out.channels = set.channels;
  out.height = set.height;
  out.width = set.width;
  out.num_classes = set.num_classes;
  out.class_names = set.class_names;
  const auto bytes = set.image_bytes();
  out.pixels.assign(set.pixels.begin() + begin * bytes, set.pixels.begin() + end * bytes);
  out.labels.assign(set.labels.begin() + begin, set.labels.begin() + end);
  return out;
}

std::string root_or(const DatasetSpec& spec, const char* fallback) {
  return spec.root.empty() ? std::string(fallback) : spec.root;
}

LoadedDataset load_cifar(const DatasetSpec& spec, int classes) {
  LoadedDataset d;
  const std::string root = root_or(spec, classes == 10 ? "data/cifar10" : "data/cifar100");
  d.train = read_cifar(root, classes, true, spec.train_limit);
  d.test = read_cifar(root, classes, false, spec.test_limit);
  if (classes == 10)
    d.norm = {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  else
    d.norm = {{0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f}};
  d.train_aug = {4, true};
  return d;
}

LoadedDataset load_mnist_like(const DatasetSpec& spec, const char* root, Normalization norm) {
  LoadedDataset d;
  d.train = read_mnist_dir(root_or(spec, root), true, spec.train_limit);
  d.test = read_mnist_dir(root_or(spec, root), false, spec.test_limit);
  d.norm = std::move(norm);
  d.train_aug = {};
  return d;
}

LoadedDataset load_imagenet_folder(const DatasetSpec& spec) {
  if (spec.root.empty())
    throw std::invalid_argument(
        "dataset 'imagenet-folder' needs a root (a folder holding train/<wnid>/*.JPEG and "
        "val/<wnid>/*.JPEG)");
  const int64_t size = spec.image_size > 0 ? spec.image_size : 64;
  LoadedDataset d;
  d.train = read_image_folder(spec.root, "train", spec.num_classes, spec.per_class, size);
  d.test = read_image_folder(spec.root, "val", spec.num_classes, spec.per_class, size);
  if (d.train.class_names != d.test.class_names)
    throw DataError("ImageFolder: the class folders of " + spec.root + "/train and " + spec.root +
                    "/val differ (" + std::to_string(d.train.class_names.size()) + " vs " +
                    std::to_string(d.test.class_names.size()) +
                    " classes taken); labels would not match");
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
  // One set split in two, so train and test share the class patterns but not the noise.
  ImageSet all =
      make_synthetic(spec.synthetic_train + spec.synthetic_test, 3, size, classes, spec.seed);
  LoadedDataset d;
  d.train = slice(all, 0, spec.synthetic_train);
  d.test = slice(all, spec.synthetic_train, all.count);
  keep_first(d.train, spec.train_limit);
  keep_first(d.test, spec.test_limit);
  d.norm = {{0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}};
  d.train_aug = {};
  return d;
}

struct Entry {
  DatasetInfo info;
  std::function<LoadedDataset(const DatasetSpec&)> load;
};

// The explicit, ordered list of datasets.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"cifar10", "CIFAR-10 binary batches (32x32 RGB, 10 classes); root default data/cifar10"},
       [](const DatasetSpec& s) { return load_cifar(s, 10); }},
      {{"cifar100", "CIFAR-100 binary (32x32 RGB, 100 fine classes); root default data/cifar100"},
       [](const DatasetSpec& s) { return load_cifar(s, 100); }},
      {{"mnist",
        "MNIST IDX files (28x28 grey, 10 classes); root default /usr/share/datasets/mnist"},
       [](const DatasetSpec& s) {
         return load_mnist_like(s, "/usr/share/datasets/mnist", {{0.1307f}, {0.3081f}});
       }},
      {{"fashion-mnist",
        "Fashion-MNIST IDX files (28x28 grey, 10 classes); root default "
        "/usr/share/datasets/fashion-mnist"},
       [](const DatasetSpec& s) {
         return load_mnist_like(s, "/usr/share/datasets/fashion-mnist", {{0.2860f}, {0.3530f}});
       }},
      {{"imagenet-folder",
        "ImageNet subset in ImageFolder layout (root/train, root/val; JPEG), resized to "
        "image_size (default 64); num_classes / per_class select a subset"},
       load_imagenet_folder},
      {{"synthetic",
        "deterministic learnable class patterns plus noise (3 x image_size^2, "
        "default 32, num_classes default 10)"},
       load_synthetic},
  };
  return kEntries;
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
  if (spec.train_limit < 0 || spec.test_limit < 0 || spec.num_classes < 0 || spec.per_class < 0 ||
      spec.image_size < 0)
    throw std::invalid_argument("dataset '" + spec.name +
                                "': train_limit, test_limit, num_classes, per_class and "
                                "image_size must be >= 0");
  for (const auto& e : entries()) {
    if (e.info.name != spec.name) continue;
    LoadedDataset d = e.load(spec);
    d.train.name = spec.name + "/train";
    d.test.name = spec.name + "/test";
    if (!spec.augment) d.train_aug = {};
    return d;
  }
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  throw std::invalid_argument("unknown dataset '" + spec.name + "'; known: " + known);
}

}  // namespace cedar
