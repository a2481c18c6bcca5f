#include "reports/link_validation_arguments.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "reports/document_arguments.h"
#include "reports/number_format.h"

namespace cedar {
namespace {

const char* const kLead = "<!-- cedar network validate arguments: ";
const char* const kTail = " -->";

namespace fs = std::filesystem;

}  // namespace

std::string link_validation_arguments_comment(const LinkValidationArguments& a) {
  nlohmann::json j = {{"databases", a.databases}, {"profiles", a.profiles},
                      {"suite", a.suite},         {"warmup", a.warmup},
                      {"target", a.target},       {"findings", a.findings},
                      {"document", a.document}};
  return kLead + j.dump() + kTail + "\n";
}

LinkValidationArguments read_link_validation_arguments(const std::string& text,
                                                       const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(recorded_comment(text, kLead), nullptr,
                                                 /*allow_exceptions=*/false);
  auto strings = [&](const char* key) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_array() || j[key].empty())
      return std::vector<std::string>();
    for (const auto& e : j[key])
      if (!e.is_string()) return std::vector<std::string>();
    return j[key].get<std::vector<std::string>>();
  };
  LinkValidationArguments a;
  a.databases = strings("databases");
  a.profiles = strings("profiles");
  if (a.databases.empty() || a.profiles.empty())
    throw std::runtime_error(path +
                             ": no recorded arguments (a line '<!-- cedar network validate "
                             "arguments: {...} -->' naming databases and profiles): write it once "
                             "with cedar network validate --document");
  auto text_of = [&](const char* key, std::string& out) {
    if (j.contains(key) && j[key].is_string()) out = j[key].get<std::string>();
  };
  text_of("suite", a.suite);
  text_of("findings", a.findings);
  text_of("document", a.document);
  if (j.contains("warmup") && j["warmup"].is_number_integer()) a.warmup = j["warmup"].get<int>();
  if (j.contains("target") && j["target"].is_number()) a.target = j["target"].get<double>();
  return a;
}

std::string link_validation_command(const LinkValidationArguments& a) {
  std::string s = "build/cedar network validate";
  for (const auto& db : a.databases) s += " " + command_word(db);
  s += " --profiles";
  for (const auto& p : a.profiles) s += " " + command_word(p);
  if (!a.suite.empty()) s += " --suite " + command_word(a.suite);
  s += " --warmup " + std::to_string(a.warmup);
  if (a.target != 0.15) s += " --target " + fmt("%g", a.target);
  if (!a.document.empty()) s += " --document " + command_word(a.document);
  if (!a.findings.empty()) s += " --findings " + command_word(a.findings);
  return s;
}

std::string link_validation_data_dir(const std::string& document) {
  const fs::path doc(document);
  return (doc.parent_path() / (doc.stem().string() + "-data")).string();
}

std::string link_validation_dump_path(const std::string& document, const std::string& database) {
  return (fs::path(link_validation_data_dir(document)) /
          (fs::path(database).stem().string() + ".sql.gz"))
      .string();
}

std::string link_validation_profile_copy(const std::string& document, const std::string& profile) {
  return (fs::path(link_validation_data_dir(document)) / fs::path(profile).filename()).string();
}

void check_distinct_file_names(const LinkValidationArguments& a) {
  std::set<std::string> dumps, copies;
  for (const auto& db : a.databases)
    if (!dumps.insert(fs::path(db).stem().string()).second)
      throw std::invalid_argument(db + ": another database given has the same name (" +
                                  fs::path(db).stem().string() +
                                  "): their dumps beside the document would collide");
  for (const auto& p : a.profiles)
    if (!copies.insert(fs::path(p).filename().string()).second)
      throw std::invalid_argument(p +
                                  ": another profile file given has the same name: their "
                                  "copies beside the document would collide");
}

}  // namespace cedar
