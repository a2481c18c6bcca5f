// Training images per second out of ShardedLoader (datasets/loader.h), Google Benchmark, medians
// of repetitions, and their ratios printed at the end of the same run:
//   loader/memory/prefetch:P/workers:W     one epoch of 1,024 in-memory 64 x 64 RGB images
//                                          (batches of 64, pad-8 crop + flip, normalised)
//   loader+step/memory/prefetch:P          the same with a 2 ms step per batch in which the
//                                          caller's CPU waits (a GPU step's shape): prefetching
//                                          hides the batch's preparation behind it
//   folder/eager|lazy/prefetch:P/workers:W one epoch of an ImageFolder tree of 512 JPEGs
//                                          (80 x 64, decoded to 64 x 64) the bench writes into a
//                                          temporary folder: eager from the decoded pixels,
//                                          lazy decoding each batch's files
// Wall-clock time throughout (the workers' CPU time is not the caller's).
#include <benchmark/benchmark.h>
#include <ftw.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "datasets/loader.h"
#include "datasets/readers.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBatch = 64;
constexpr int kSide = 64;
const Normalization kNorm{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
const Augmentation kAug{kSide / 8, true};

const ImageSet& memory_set() {
  static const ImageSet set = make_synthetic(1024, 3, kSide, 10, 1);
  return set;
}

void write_jpeg(const fs::path& file, int w, int h, int seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[static_cast<size_t>((y * w + x) * 3 + c)] =
            static_cast<uint8_t>((x * (c + 1) * 7 + y * 5 + seed * 13 + (x ^ y) * c) & 0xff);
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(handle, rgb.data(), w, 0, h, TJPF_RGB, &jpeg, &size, TJSAMP_420, 90, 0);
  if (rc == 0) {
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(jpeg), size);
  }
  tjFree(jpeg);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("loader_bench: cannot encode " + file.string());
}

// The bench's ImageFolder tree, written once and removed at exit (with nftw: std::filesystem's
// remove_all is not safe in binaries linked with LibTorch).
struct Folder {
  fs::path root;
  ImageSet eager, lazy;
  Folder() {
    char tmpl[] = "/tmp/cedar-loader-bench.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("loader_bench: mkdtemp failed");
    root = tmpl;
    for (int c = 0; c < 8; ++c)
      for (int k = 0; k < 64; ++k)
        write_jpeg(root / "train" / ("n" + std::to_string(c)) / ("i" + std::to_string(k) + ".JPEG"),
                   80, 64, c * 64 + k);
    eager = read_image_folder(root.string(), "train", 0, 0, kSide);
    lazy = index_image_folder(root.string(), "train", 0, 0, kSide);
  }
  ~Folder() {
    nftw(
        root.c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
};

Folder& folder() {
  static Folder f;
  return f;
}

// One epoch per iteration; `step` is the caller's time per batch.
void run_epochs(benchmark::State& state, const ImageSet& set, PrefetchOptions p,
                std::chrono::microseconds step) {
  ShardedLoader loader(set, kNorm, kAug, kBatch, 0, 1, 1, true, true, p);
  int64_t epoch = 0, images = 0;
  Batch batch;
  for (auto _ : state) {
    loader.start_epoch(epoch++);
    while (loader.next(batch)) {
      images += batch.images.size(0);
      if (step.count() > 0) std::this_thread::sleep_for(step);
    }
    benchmark::DoNotOptimize(batch.images.data_ptr());
  }
  state.SetItemsProcessed(images);
}

void BM_memory(benchmark::State& state) {
  run_epochs(state, memory_set(), {state.range(0), state.range(1), false}, {});
}
void BM_memory_step(benchmark::State& state) {
  run_epochs(state, memory_set(), {state.range(0), 1, false}, std::chrono::microseconds(2000));
}
void BM_eager(benchmark::State& state) {
  run_epochs(state, folder().eager, {state.range(0), state.range(1), false}, {});
}
void BM_lazy(benchmark::State& state) {
  run_epochs(state, folder().lazy, {state.range(0), state.range(1), false}, {});
}

void configure(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
}

BENCHMARK(BM_memory)
    ->Name("loader/memory")
    ->ArgNames({"prefetch", "workers"})
    ->Args({0, 1})
    ->Args({2, 1})
    ->Args({4, 2})
    ->Apply(configure);
BENCHMARK(BM_memory_step)
    ->Name("loader+step/memory")
    ->ArgNames({"prefetch"})
    ->Arg(0)
    ->Arg(2)
    ->Apply(configure);
BENCHMARK(BM_eager)
    ->Name("folder/eager")
    ->ArgNames({"prefetch", "workers"})
    ->Args({0, 1})
    ->Apply(configure);
BENCHMARK(BM_lazy)
    ->Name("folder/lazy")
    ->ArgNames({"prefetch", "workers"})
    ->Args({0, 1})
    ->Args({2, 1})
    ->Args({4, 2})
    ->Apply(configure);

// The console output, plus each benchmark's median images/s for the ratios.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> medians;
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const auto it = r.counters.find("items_per_second");
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median" && it != r.counters.end())
        medians[r.run_name.function_name + "/" + r.run_name.args] = it->second.value;
    }
  }
};

void print_ratio(const std::map<std::string, double>& m, const char* what, const std::string& a,
                 const std::string& b) {
  const auto x = m.find(a), y = m.find(b);
  if (x == m.end() || y == m.end() || y->second <= 0) return;  // filtered out
  std::printf("  %-52s %8.0f / %8.0f img/s = %.2fx\n", what, x->second, y->second,
              x->second / y->second);
}

}  // namespace
}  // namespace cedar

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  cedar::MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& m = reporter.medians;
  std::printf("\nmedian images/s, ratios:\n");
  cedar::print_ratio(m, "in memory, prefetch 2 vs synchronous",
                     "loader/memory/prefetch:2/workers:1", "loader/memory/prefetch:0/workers:1");
  cedar::print_ratio(m, "in memory, prefetch 4 on 2 workers vs synchronous",
                     "loader/memory/prefetch:4/workers:2", "loader/memory/prefetch:0/workers:1");
  cedar::print_ratio(m, "with a 2 ms step, prefetch 2 vs synchronous",
                     "loader+step/memory/prefetch:2", "loader+step/memory/prefetch:0");
  cedar::print_ratio(m, "ImageFolder lazy vs eager, synchronous",
                     "folder/lazy/prefetch:0/workers:1", "folder/eager/prefetch:0/workers:1");
  cedar::print_ratio(m, "ImageFolder lazy, prefetch 2 vs lazy synchronous",
                     "folder/lazy/prefetch:2/workers:1", "folder/lazy/prefetch:0/workers:1");
  cedar::print_ratio(m, "ImageFolder lazy, prefetch 4 on 2 workers vs eager",
                     "folder/lazy/prefetch:4/workers:2", "folder/eager/prefetch:0/workers:1");
  benchmark::Shutdown();
  return 0;
}
