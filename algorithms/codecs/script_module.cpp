#include "algorithms/codecs/script_module.h"

#include <torch/script.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>

#include "config/params.h"

namespace cedar {
namespace {

// The message of an exception from the TorchScript interpreter or the loader, without LibTorch's
// C++ backtrace.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  return e.what();
}

// Where in the script's Python source an error arose: the innermost frame of the interpreter's
// "original code" traceback, as "FILE.py:LINE (in FUNCTION)"; empty when the message has none
// (a module saved without debug information, or an error outside the script's code).
std::string python_location(const std::string& what) {
  const size_t original = what.find("original code");
  if (original == std::string::npos) return "";
  const std::string file_tag = "File \"";
  const size_t frame = what.rfind(file_tag);
  if (frame == std::string::npos || frame < original) return "";
  const size_t name_start = frame + file_tag.size();
  const size_t name_end = what.find('"', name_start);
  if (name_end == std::string::npos) return "";
  const std::string line_tag = ", line ";
  if (what.compare(name_end + 1, line_tag.size(), line_tag) != 0) return "";
  size_t pos = name_end + 1 + line_tag.size();
  std::string line;
  while (pos < what.size() && std::isdigit(static_cast<unsigned char>(what[pos])))
    line += what[pos++];
  std::string out = what.substr(name_start, name_end - name_start) + ":" + line;
  const std::string in_tag = ", in ";
  if (what.compare(pos, in_tag.size(), in_tag) == 0) {
    const size_t fn_end = what.find('\n', pos);
    out += " (in " + what.substr(pos + in_tag.size(), fn_end - pos - in_tag.size()) + ")";
  }
  return out;
}

// The last non-empty line of an interpreter message: the Python exception and its text.
std::string last_line(const std::string& what) {
  size_t end = what.find_last_not_of("\n ");
  if (end == std::string::npos) return what;
  const size_t start = what.rfind('\n', end);
  return what.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// Runs `call`, turning an error raised inside the script into a ConfigError that names the .pt
// file, the method and, where the module carries it, the Python file and line.
template <class F>
auto in_script(const std::string& path, const char* method, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = message_of(e);
    const std::string at = python_location(what);
    throw ConfigError("script " + path + ": " + method + " failed" +
                      (at.empty() ? "" : " at " + at) + ": " + last_line(what));
  }
}

std::string type_text(const c10::TypePtr& t) { return t ? t->annotation_str() : "?"; }

std::string signature(const c10::FunctionSchema& schema) {
  std::ostringstream s;
  s << schema;
  return s.str();
}

// The arguments after self of `method`, each told by its type among `allowed`; throws naming the
// file, the method and `expected` (the documented signature) when one is of another type or a
// required one is missing.
std::vector<ScriptArg> arguments_of(const std::string& path, const torch::jit::Module& module,
                                    const char* method, const std::vector<ScriptArg>& allowed,
                                    const std::vector<ScriptArg>& required,
                                    const c10::TypePtr& returns, const std::string& expected) {
  const auto m = module.find_method(method);
  if (!m)
    throw ConfigError("script " + path + ": no method " + method + " (expected " + expected +
                      ", exported with @torch.jit.export)");
  const c10::FunctionSchema& schema = m->function().getSchema();
  const auto fail = [&](const std::string& why) {
    throw ConfigError("script " + path + ": " + method + " is " + signature(schema) + ": " + why +
                      " (expected " + expected + ")");
  };
  std::vector<ScriptArg> args;
  const auto& declared = schema.arguments();
  for (size_t i = 1; i < declared.size(); ++i) {
    const c10::TypePtr& t = declared[i].type();
    ScriptArg kind;
    if (t->kind() == c10::TypeKind::TensorType) {
      kind = ScriptArg::kTensor;
    } else if (t->kind() == c10::TypeKind::StringType) {
      kind = ScriptArg::kName;
    } else if (t->kind() == c10::TypeKind::GeneratorType) {
      kind = ScriptArg::kGenerator;
    } else if (t->kind() == c10::TypeKind::IntType) {
      kind = ScriptArg::kNumel;
    } else if (t->kind() == c10::TypeKind::ListType &&
               t->containedType(0)->kind() == c10::TypeKind::TensorType) {
      kind = ScriptArg::kParts;
    } else {
      fail("argument '" + declared[i].name() + "' is of type " + type_text(t));
    }
    if (std::find(allowed.begin(), allowed.end(), kind) == allowed.end())
      fail("argument '" + declared[i].name() + "' of type " + type_text(t) + " is not one " +
           method + " takes");
    if (std::find(args.begin(), args.end(), kind) != args.end())
      fail("two arguments of type " + type_text(t));
    args.push_back(kind);
  }
  for (ScriptArg r : required)
    if (std::find(args.begin(), args.end(), r) == args.end()) fail("an argument is missing");
  if (schema.returns().size() != 1 || !schema.returns()[0].type()->isSubtypeOf(*returns))
    fail("it must return " + type_text(returns));
  return args;
}

}  // namespace

ScriptModule::ScriptModule(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError("script " + path + ": no such file (a module saved by torch.jit.script(" +
                      "...).save; relative paths are from the working directory " +
                      std::filesystem::current_path(ec).string() + ")");
  try {
    module_ = std::make_unique<torch::jit::Module>(torch::jit::load(path));
  } catch (const std::exception& e) {
    throw ConfigError("script " + path + ": not a TorchScript module: " + last_line(message_of(e)));
  }
  module_->eval();

  if (!module_->hasattr("exchange") || !module_->attr("exchange").isString())
    throw ConfigError("script " + path +
                      ": no attribute 'exchange' of type str (allgather or allreduce)");
  const std::string exchange = module_->attr("exchange").toStringRef();
  if (exchange == "allgather") {
    exchange_ = ScriptExchange::kAllgather;
  } else if (exchange == "allreduce") {
    exchange_ = ScriptExchange::kAllreduce;
  } else {
    throw ConfigError("script " + path + ": exchange '" + exchange +
                      "' is not one Cedar knows (allgather: every rank's compressed tensors "
                      "gathered, decoded and averaged; allreduce: the compressed tensors summed, "
                      "then decoded)");
  }

  if (module_->hasattr("defaults")) {
    const c10::IValue d = module_->attr("defaults");
    const c10::TypePtr type = d.type();
    if (!d.isGenericDict() || type->containedType(0)->kind() != c10::TypeKind::StringType ||
        type->containedType(1)->kind() != c10::TypeKind::FloatType)
      throw ConfigError("script " + path + ": attribute 'defaults' is " + type_text(type) +
                        ", expected Dict[str, float]");
    for (const auto& kv : d.toGenericDict())
      defaults_[kv.key().toStringRef()] = kv.value().toDouble();
  }

  if (const auto configure = module_->find_method("configure")) {
    const c10::FunctionSchema& schema = configure->function().getSchema();
    const auto& args = schema.arguments();
    const bool takes_dict = args.size() == 2 && args[1].type()->kind() == c10::TypeKind::DictType &&
                            args[1].type()->containedType(0)->kind() == c10::TypeKind::StringType &&
                            args[1].type()->containedType(1)->kind() == c10::TypeKind::FloatType;
    if (!takes_dict)
      throw ConfigError("script " + path + ": configure is " + signature(schema) +
                        " (expected configure(self, params: Dict[str, float]) -> None)");
    has_configure_ = true;
  }
  const auto tensor_list = c10::ListType::ofTensors();
  compress_args_ = arguments_of(
      path, *module_, "compress", {ScriptArg::kTensor, ScriptArg::kName, ScriptArg::kGenerator},
      {ScriptArg::kTensor}, tensor_list,
      "compress(self, x: Tensor[, name: str][, gen: Generator]) -> List[Tensor]");
  decompress_args_ = arguments_of(
      path, *module_, "decompress", {ScriptArg::kParts, ScriptArg::kNumel, ScriptArg::kName},
      {ScriptArg::kParts, ScriptArg::kNumel}, c10::TensorType::get(),
      "decompress(self, parts: List[Tensor], numel: int[, name: str]) -> Tensor");
}

ScriptModule::~ScriptModule() = default;

void ScriptModule::configure(const std::map<std::string, double>& params) {
  if (!has_configure_) return;
  c10::Dict<std::string, double> dict;
  for (const auto& [key, value] : params) dict.insert(key, value);
  in_script(path_, "configure", [&] { module_->get_method("configure")({c10::IValue(dict)}); });
}

std::vector<at::Tensor> ScriptModule::compress(const at::Tensor& x, const std::string& name,
                                               at::Generator& gen) {
  std::vector<c10::IValue> args;
  for (ScriptArg a : compress_args_) {
    if (a == ScriptArg::kTensor) args.emplace_back(x);
    if (a == ScriptArg::kName) args.emplace_back(name);
    if (a == ScriptArg::kGenerator) args.emplace_back(gen);
  }
  c10::IValue out =
      in_script(path_, "compress", [&] { return module_->get_method("compress")(args); });
  return out.toTensorVector();
}

at::Tensor ScriptModule::decompress(const std::vector<at::Tensor>& parts, int64_t numel,
                                    const std::string& name) {
  std::vector<c10::IValue> args;
  for (ScriptArg a : decompress_args_) {
    if (a == ScriptArg::kParts) {
      c10::List<at::Tensor> list;
      list.reserve(parts.size());
      for (const at::Tensor& p : parts) list.push_back(p);
      args.emplace_back(std::move(list));
    }
    if (a == ScriptArg::kNumel) args.emplace_back(numel);
    if (a == ScriptArg::kName) args.emplace_back(name);
  }
  c10::IValue out =
      in_script(path_, "decompress", [&] { return module_->get_method("decompress")(args); });
  return out.toTensor();
}

std::map<std::string, at::Tensor> ScriptModule::state() const {
  std::map<std::string, at::Tensor> out;
  for (const auto& a : module_->named_attributes(/*recurse=*/false)) {
    if (a.value.isTensor()) {
      out[a.name] = a.value.toTensor().detach().clone();
    } else if (a.value.isGenericDict() &&
               a.value.type()->containedType(0)->kind() == c10::TypeKind::StringType &&
               a.value.type()->containedType(1)->kind() == c10::TypeKind::TensorType) {
      for (const auto& kv : a.value.toGenericDict())
        out[a.name + "/" + kv.key().toStringRef()] = kv.value().toTensor().detach().clone();
    }
  }
  return out;
}

void ScriptModule::load_state(const std::map<std::string, at::Tensor>& state) {
  for (const auto& a : module_->named_attributes(/*recurse=*/false)) {
    if (a.value.isTensor()) {
      auto it = state.find(a.name);
      if (it != state.end()) module_->setattr(a.name, it->second.clone());
    } else if (a.value.isGenericDict() &&
               a.value.type()->containedType(0)->kind() == c10::TypeKind::StringType &&
               a.value.type()->containedType(1)->kind() == c10::TypeKind::TensorType) {
      c10::impl::GenericDict dict = a.value.toGenericDict();
      dict.clear();
      const std::string prefix = a.name + "/";
      for (auto it = state.lower_bound(prefix);
           it != state.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
        dict.insert(it->first.substr(prefix.size()), it->second.clone());
    }
  }
}

}  // namespace cedar
