// Bad compressor scripts and bad parameters for them (algorithm `script`): each error names the
// file (the .pt, and the Python file and line where the script itself failed) or the key at
// fault. The scripts are exported with Cedar's venv Python; without it every test is skipped.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <fstream>
#include <map>
#include <string>

#include "config/params.h"
#include "tests/unit/algorithm_harness.h"
#include "tests/unit/script_export.h"

namespace cedar {
namespace {

// A module whose pieces the tests below replace: the exchange it declares, its compress and its
// decompress (Python source, 4-space indented).
std::string bad_script(const std::string& cls, const std::string& exchange,
                       const std::string& compress, const std::string& decompress) {
  return "import sys\nfrom typing import Dict, List\nimport torch\n\nclass " + cls +
         "(torch.nn.Module):\n    exchange: str\n\n    def __init__(self):\n"
         "        super().__init__()\n        self.exchange = \"" +
         exchange + "\"\n\n" + compress + "\n" + decompress +
         "\nif __name__ == \"__main__\":\n    torch.jit.script(" + cls + "()).save(sys.argv[1])\n";
}

const std::string kCompress =
    "    @torch.jit.export\n"
    "    def compress(self, x: torch.Tensor) -> List[torch.Tensor]:\n"
    "        return [x]\n";
const std::string kDecompress =
    "    @torch.jit.export\n"
    "    def decompress(self, parts: List[torch.Tensor], numel: int) -> torch.Tensor:\n"
    "        return parts[0]\n";

const std::map<std::string, std::string>& bad_scripts() {
  using testing::write_script;
  static const std::map<std::string, std::string> pts = testing::export_scripts({
      "examples/script_topk.py",
      write_script("no_decompress", bad_script("NoDecompress", "allgather", kCompress, "")),
      write_script("broadcast", bad_script("Broadcast", "broadcast", kCompress, kDecompress)),
      write_script("int_input", bad_script("IntInput", "allgather",
                                           "    @torch.jit.export\n"
                                           "    def compress(self, x: int) -> List[torch.Tensor]:\n"
                                           "        return [torch.zeros(x)]\n",
                                           kDecompress)),
      write_script("bad_index",
                   bad_script("BadIndex", "allgather",
                              "    @torch.jit.export\n"
                              "    def compress(self, x: torch.Tensor) -> List[torch.Tensor]:\n"
                              "        return [x[x.numel() + 5].view(1)]  # out of range\n",
                              kDecompress)),
      write_script("threshold",
                   bad_script("Threshold", "allgather",
                              "    @torch.jit.export\n"
                              "    def compress(self, x: torch.Tensor) -> List[torch.Tensor]:\n"
                              "        return [x[x.abs() > 1.0]]\n",
                              "    @torch.jit.export\n"
                              "    def decompress(self, parts: List[torch.Tensor], numel: int) "
                              "-> torch.Tensor:\n"
                              "        return torch.zeros(numel)\n")),
      write_script("short_decoding",
                   bad_script("ShortDecoding", "allgather", kCompress,
                              "    @torch.jit.export\n"
                              "    def decompress(self, parts: List[torch.Tensor], numel: int) "
                              "-> torch.Tensor:\n"
                              "        return parts[0][1:]\n")),
      write_script("half_sum",
                   bad_script("HalfSum", "allreduce",
                              "    @torch.jit.export\n"
                              "    def compress(self, x: torch.Tensor) -> List[torch.Tensor]:\n"
                              "        return [x.half()]\n",
                              kDecompress)),
  });
  return pts;
}

// The message of the ConfigError that building `script` from `yaml` throws ("" when none).
std::string build_error(const std::string& yaml) {
  try {
    testing::make_algorithm("script", yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The message of the ConfigError that one step of the script at `stem` throws ("" when none).
std::string step_error(const std::string& stem, int steps = 1) {
  auto alg = testing::make_algorithm("script", "{path: '" + bad_scripts().at(stem) + "'}");
  try {
    for (int s = 0; s < steps; ++s)
      testing::reduce_once(*alg, testing::randn_seeded(100, static_cast<uint64_t>(s)), s);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string with_path(const std::string& stem, const std::string& more = "") {
  return "{path: '" + bad_scripts().at(stem) + "'" + (more.empty() ? "" : ", " + more) + "}";
}

TEST(BadScript, MissingOrUnreadableFilesNameThePath) {
  SKIP_WITHOUT_VENV_PYTHON();
  EXPECT_NE(build_error("{}").find("algorithm.path"), std::string::npos);
  const std::string missing = build_error("{path: /nonexistent/topk.pt}");
  EXPECT_NE(missing.find("/nonexistent/topk.pt: no such file"), std::string::npos) << missing;
  const std::string text = testing::script_dir() + "/text.pt";
  std::ofstream(text) << "not a module\n";
  const std::string garbage = build_error("{path: '" + text + "'}");
  EXPECT_NE(garbage.find(text + ": not a TorchScript module"), std::string::npos) << garbage;
}

TEST(BadScript, AMissingOrMistypedPieceOfTheInterfaceIsNamed) {
  SKIP_WITHOUT_VENV_PYTHON();
  const std::string no_decompress = build_error(with_path("no_decompress"));
  EXPECT_NE(no_decompress.find(bad_scripts().at("no_decompress") + ": no method decompress"),
            std::string::npos)
      << no_decompress;
  const std::string broadcast = build_error(with_path("broadcast"));
  EXPECT_NE(broadcast.find("exchange 'broadcast' is not one Cedar knows"), std::string::npos)
      << broadcast;
  const std::string int_input = build_error(with_path("int_input"));
  EXPECT_NE(int_input.find("compress is compress("), std::string::npos) << int_input;
  EXPECT_NE(int_input.find("argument 'x' of type int is not one compress takes"), std::string::npos)
      << int_input;
}

TEST(BadScript, ParametersAreTheScriptsDefaultsAndNumbers) {
  SKIP_WITHOUT_VENV_PYTHON();
  const std::string unknown = build_error(with_path("script_topk", "ratioo: 0.1"));
  EXPECT_NE(unknown.find("unknown key 'algorithm.ratioo'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("known keys of algorithm: error_feedback, name, path, ratio)"),
            std::string::npos)
      << unknown;
  const std::string text = build_error(with_path("script_topk", "ratio: fast"));
  EXPECT_NE(text.find("algorithm.ratio: expected a number, got 'fast'"), std::string::npos) << text;
  const std::string list = build_error(with_path("script_topk", "ratio: [0.1]"));
  EXPECT_NE(list.find("algorithm.ratio: expected a number, got a list"), std::string::npos) << list;
}

// The script's own checks and failures name the .pt, the .py and the line.
TEST(BadScript, AnErrorInsideTheScriptNamesItsPythonLine) {
  SKIP_WITHOUT_VENV_PYTHON();
  const std::string src = std::string(std::getenv("CEDAR_SOURCE_DIR")) + "/examples/script_topk.py";
  const int raise_line = testing::line_of(src, "raise ValueError(\"ratio must be in (0, 1]\")");
  ASSERT_GT(raise_line, 0);
  const std::string configure = build_error(with_path("script_topk", "ratio: 1.5"));
  EXPECT_NE(configure.find(bad_scripts().at("script_topk") + ": configure failed at "),
            std::string::npos)
      << configure;
  EXPECT_NE(configure.find("script_topk.py:" + std::to_string(raise_line) + " (in configure)"),
            std::string::npos)
      << configure;
  EXPECT_NE(configure.find("ratio must be in (0, 1]"), std::string::npos) << configure;

  const std::string py = testing::script_dir() + "/bad_index.py";
  const int index_line = testing::line_of(py, "# out of range");
  const std::string index = step_error("bad_index");
  EXPECT_NE(index.find(bad_scripts().at("bad_index") + ": compress failed at " + py + ":" +
                       std::to_string(index_line) + " (in compress)"),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("RuntimeError: select(): index 105 out of range"), std::string::npos)
      << index;
}

TEST(BadScript, WhatTheExchangeCannotCarryIsRefused) {
  SKIP_WITHOUT_VENV_PYTHON();
  // Sizes that follow from the values: the second step's differ from the first's.
  const std::string threshold = step_error("threshold", 2);
  EXPECT_NE(threshold.find("must follow from the element count alone"), std::string::npos)
      << threshold;
  const std::string short_decoding = step_error("short_decoding");
  EXPECT_NE(short_decoding.find("decompress returned"), std::string::npos) << short_decoding;
  EXPECT_NE(short_decoding.find("expected 100 floating-point values"), std::string::npos)
      << short_decoding;
  const std::string half = step_error("half_sum");
  EXPECT_NE(half.find("allreduce sums only"), std::string::npos) << half;
}

}  // namespace
}  // namespace cedar
