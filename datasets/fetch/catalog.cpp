// The built-in catalog. Every size and checksum below is copied from the place cited beside it;
// none is computed here. Where two places publish a value for the same file, both are checked.
//
// Sources:
//   [cifar]   the CIFAR authors' download table, https://www.cs.toronto.edu/~kriz/cifar.html
//             ("Version | Size | md5sum"; whole-file MD5).
//   [tv]      torchvision, torchvision/datasets/mnist.py (MNIST.resources, FashionMNIST.resources;
//             whole-file MD5 of each .gz file, and the mirrors it downloads from).
//   [tfds]    TensorFlow Datasets' recorded downloads (URL, size in bytes, whole-file SHA-256):
//             tensorflow_datasets/url_checksums/{cifar10,cifar100,mnist,fashion_mnist}.txt and
//             tensorflow_datasets/datasets/imagenette/checksums.tsv.
//   [fastai]  fastai's fastai/data/checks.txt (URL -> [size, md5]) and its URLs class
//             (fastai/data/external.py). fastai's MD5 there is of the file's FIRST MEGABYTE only
//             (`hashlib.md5(f.read(2**20))` in fastai's _check_file / fastdownload's path_stats),
//             so it is checked as md5-first-mib, never as a whole-file MD5.
//
// Imagewoof: fast.ai replaced the Imagenette and Imagewoof archives in 2021; fastai's checks.txt
// has the current sizes. TFDS updated its Imagenette SHA-256s (sizes agree with fastai's) but its
// imagewoof.txt still lists the earlier archives (e.g. imagewoof2.tgz 1343482285 bytes, not
// 1343715595), and no whole-file checksum of the current Imagewoof archives was found published.
// Imagewoof is therefore checked by size and fastai's first-megabyte MD5 only, and `tar` then
// checks the rest through gzip's CRC-32 while extracting.
#include "datasets/fetch/catalog.h"

#include <string>
#include <vector>

namespace cedar {
namespace {

constexpr const char* kCifarPage = "https://www.cs.toronto.edu/~kriz/cifar.html";
constexpr const char* kTorchvision = "torchvision/datasets/mnist.py";
constexpr const char* kFastaiChecks = "fastai/data/checks.txt";

Checksum md5(const char* value, const char* source) { return {HashKind::kMd5, value, source}; }
Checksum sha256(const char* value, const char* source) {
  return {HashKind::kSha256, value, source};
}
Checksum fastai_md5(const char* value) { return {HashKind::kMd5FirstMib, value, kFastaiChecks}; }

std::vector<std::string> mnist_files() {
  return {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz"};
}

// fast.ai's ImageNet subsets: one archive whose top folder is the data set, ImageFolder layout.
DataSource fastai_subset(const std::string& name, const std::string& folder,
                         const std::string& what, RemoteFile file) {
  DataSource s;
  s.name = name;
  s.description = what + "; ImageFolder train/<wnid>/*.JPEG, val/<wnid>/*.JPEG";
  s.dir = folder;
  s.bases = {"https://s3.amazonaws.com/fast-ai-imageclas/"};  // [fastai] URLs.S3_IMAGE
  s.files = {std::move(file)};
  s.unpack = Unpack::kTarGz;
  s.top_folder = folder;
  s.expect = {"train", "val"};
  s.dataset = "imagenet-folder";
  return s;
}

std::vector<DataSource> make_builtin() {
  std::vector<DataSource> out;

  DataSource cifar10;
  cifar10.name = "cifar10";
  cifar10.description = "CIFAR-10, binary version: 50,000 + 10,000 32x32 colour images, 10 classes";
  cifar10.dir = "cifar10";
  cifar10.bases = {"https://www.cs.toronto.edu/~kriz/"};  // [cifar]
  cifar10.files = {{"cifar-10-binary.tar.gz",
                    170052171,  // [tfds] url_checksums/cifar10.txt ([cifar]: "162 MB")
                    {md5("c32a1d4ab5d03f1284b67883e8d87530", kCifarPage),
                     sha256("c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
                            "tensorflow_datasets/url_checksums/cifar10.txt")}}};
  cifar10.top_folder = "";
  for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                        "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"})
    cifar10.expect.push_back(std::string("cifar-10-batches-bin/") + f);
  cifar10.dataset = "cifar10";
  out.push_back(cifar10);

  DataSource cifar100;
  cifar100.name = "cifar100";
  cifar100.description =
      "CIFAR-100, binary version: 50,000 + 10,000 32x32 colour images, 100 classes";
  cifar100.dir = "cifar100";
  cifar100.bases = {"https://www.cs.toronto.edu/~kriz/"};  // [cifar]
  cifar100.files = {{"cifar-100-binary.tar.gz",
                     168513733,  // [tfds] url_checksums/cifar100.txt ([cifar]: "161 MB")
                     {md5("03b5dce01913d631647c71ecec9e9cb8", kCifarPage),
                      sha256("58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec",
                             "tensorflow_datasets/url_checksums/cifar100.txt")}}};
  cifar100.expect = {"cifar-100-binary/train.bin", "cifar-100-binary/test.bin"};
  cifar100.dataset = "cifar100";
  out.push_back(cifar100);

  // MNIST: torchvision's mirrors, the S3 copy first (the original host now often refuses
  // scripted downloads). Sizes and SHA-256 from [tfds] url_checksums/mnist.txt, MD5 from [tv].
  DataSource mnist;
  mnist.name = "mnist";
  mnist.description = "MNIST: 60,000 + 10,000 28x28 handwritten digits, gzipped IDX files";
  mnist.dir = "mnist";
  mnist.bases = {"https://ossci-datasets.s3.amazonaws.com/mnist/",
                 "http://yann.lecun.com/exdb/mnist/"};
  const char* mnist_tfds = "tensorflow_datasets/url_checksums/mnist.txt";
  mnist.files = {
      {"train-images-idx3-ubyte.gz",
       9912422,
       {md5("f68b3c2dcbeaaa9fbdd348bbdeb94873", kTorchvision),
        sha256("440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", mnist_tfds)}},
      {"train-labels-idx1-ubyte.gz",
       28881,
       {md5("d53e105ee54ea40749a09fcbcd1e9432", kTorchvision),
        sha256("3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", mnist_tfds)}},
      {"t10k-images-idx3-ubyte.gz",
       1648877,
       {md5("9fb629c4189551a2d022fa330f9573f3", kTorchvision),
        sha256("8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", mnist_tfds)}},
      {"t10k-labels-idx1-ubyte.gz",
       4542,
       {md5("ec29112dd5afa0611ce80d1b7f02629c", kTorchvision),
        sha256("f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", mnist_tfds)}}};
  mnist.unpack = Unpack::kNone;
  mnist.expect = mnist_files();
  mnist.dataset = "mnist";
  out.push_back(mnist);

  // Fashion-MNIST: the authors' S3 bucket (zalandoresearch/fashion-mnist, as [tv] uses it).
  // Sizes and SHA-256 from [tfds] url_checksums/fashion_mnist.txt, MD5 from [tv].
  DataSource fashion;
  fashion.name = "fashion-mnist";
  fashion.description = "Fashion-MNIST: 60,000 + 10,000 28x28 clothing images, gzipped IDX files";
  fashion.dir = "fashion-mnist";
  fashion.bases = {"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"};
  const char* fashion_tfds = "tensorflow_datasets/url_checksums/fashion_mnist.txt";
  fashion.files = {
      {"train-images-idx3-ubyte.gz",
       26421880,
       {md5("8d4fb7e6c68d591d4c3dfef9ec88bf0d", kTorchvision),
        sha256("3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", fashion_tfds)}},
      {"train-labels-idx1-ubyte.gz",
       29515,
       {md5("25c81989df183df01b3e8a0aad5dffbe", kTorchvision),
        sha256("a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", fashion_tfds)}},
      {"t10k-images-idx3-ubyte.gz",
       4422102,
       {md5("bef4ecab320f06d8554ea6380940ec79", kTorchvision),
        sha256("346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", fashion_tfds)}},
      {"t10k-labels-idx1-ubyte.gz",
       5148,
       {md5("bb300cfdad3c16e7a12a480ee83cd310", kTorchvision),
        sha256("67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", fashion_tfds)}}};
  fashion.unpack = Unpack::kNone;
  fashion.expect = mnist_files();
  fashion.dataset = "fashion-mnist";
  out.push_back(fashion);

  // Imagenette: sizes and first-megabyte MD5 from [fastai] checks.txt; whole-file SHA-256 from
  // [tfds] datasets/imagenette/checksums.tsv (the same sizes).
  const char* nette_tfds = "tensorflow_datasets/datasets/imagenette/checksums.tsv";
  const std::string nette = "Imagenette (fast.ai): 10 easy ImageNet classes";
  out.push_back(fastai_subset(
      "imagenette", "imagenette2", nette + ", full size",
      {"imagenette2.tgz",
       1557161267,
       {fastai_md5("2c774ecb40005b35d7937d50f5d42336"),
        sha256("6cbfac238434d89fe99e651496f0812ebc7a10fa62bd42d6874042bf01de4efd", nette_tfds)}}));
  out.push_back(fastai_subset(
      "imagenette-160", "imagenette2-160", nette + ", shorter side 160 px",
      {"imagenette2-160.tgz",
       99003388,
       {fastai_md5("c475f8f7617a200ba35b9facc48443c3"),
        sha256("64d0c4859f35a461889e0147755a999a48b49bf38a7e0f9bd27003f10db02fe5", nette_tfds)}}));
  out.push_back(fastai_subset(
      "imagenette-320", "imagenette2-320", nette + ", shorter side 320 px",
      {"imagenette2-320.tgz",
       341663724,
       {fastai_md5("1f1f74f133caff120e575856659b87a2"),
        sha256("569b4497c98db6dd29f335d1f109cf315fe127053cedf69010d047f0188e158c", nette_tfds)}}));

  // Imagewoof: sizes and first-megabyte MD5 from [fastai] checks.txt; no whole-file checksum of
  // these archives is published (see the top of this file).
  const std::string woof = "Imagewoof (fast.ai): 10 ImageNet dog breeds";
  out.push_back(fastai_subset(
      "imagewoof", "imagewoof2", woof + ", full size",
      {"imagewoof2.tgz", 1343715595, {fastai_md5("2cc1c1e36e20cb6fd24ffb978edcb487")}}));
  out.push_back(fastai_subset(
      "imagewoof-160", "imagewoof2-160", woof + ", shorter side 160 px",
      {"imagewoof2-160.tgz", 92612825, {fastai_md5("3559b194123981a540b87132dbda412f")}}));
  out.push_back(fastai_subset(
      "imagewoof-320", "imagewoof2-320", woof + ", shorter side 320 px",
      {"imagewoof2-320.tgz", 328387740, {fastai_md5("7a1fd92672a559a85de76e4810a20c21")}}));
  return out;
}

}  // namespace

uint64_t DataSource::total_size() const {
  uint64_t sum = 0;
  for (const auto& f : files) sum += f.size;
  return sum;
}

const std::vector<DataSource>& builtin_data_sources() {
  static const std::vector<DataSource> kCatalog = make_builtin();
  return kCatalog;
}

}  // namespace cedar
