#include "reports/document_arguments.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace cedar {
namespace {

const char* const kLead = "<!-- cedar report arguments: ";
const char* const kTail = " -->";

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string command_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_./=,:@%+-") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string document_arguments_comment(const DocumentArguments& a) {
  nlohmann::json j = {{"db", a.db},
                      {"suite", a.suite},
                      {"claims", a.claims},
                      {"findings", a.findings},
                      {"networks", a.networks},
                      {"document", a.document},
                      {"latency_profile", a.latency_profile},
                      {"target", a.target},
                      {"workers", a.workers}};
  return kLead + j.dump() + kTail + "\n";
}

std::string recorded_comment(const std::string& text, const std::string& lead) {
  const size_t at = text.find(lead);
  if (at == std::string::npos) return "";
  const size_t end = text.find('\n', at);
  const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
  const size_t tail = line.rfind(kTail);
  if (tail == std::string::npos || tail < lead.size()) return "";
  return line.substr(lead.size(), tail - lead.size());
}

DocumentArguments read_document_arguments(const std::string& text, const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(recorded_comment(text, kLead), nullptr,
                                                 /*allow_exceptions=*/false);
  if (!j.is_object())
    throw std::runtime_error(path +
                             ": no recorded report arguments (a line '<!-- cedar report "
                             "arguments: {...} -->'): write it once with cedar report --document");
  DocumentArguments a;
  auto text_of = [&](const char* key, std::string& out) {
    if (j.contains(key) && j[key].is_string()) out = j[key].get<std::string>();
  };
  text_of("db", a.db);
  text_of("suite", a.suite);
  text_of("claims", a.claims);
  text_of("findings", a.findings);
  text_of("networks", a.networks);
  text_of("document", a.document);
  text_of("latency_profile", a.latency_profile);
  if (j.contains("target") && j["target"].is_number()) a.target = j["target"].get<double>();
  if (j.contains("workers") && j["workers"].is_array())
    a.workers = j["workers"].get<std::vector<int>>();
  return a;
}

std::string document_commands(const DocumentArguments& a) {
  std::string s;
  if (!a.claims.empty())
    s += "build/cedar suite " + command_word(a.claims) + " --db " + command_word(a.db) + "\n";
  s += "build/cedar report " + command_word(a.db);
  if (!a.suite.empty()) s += " --suite " + command_word(a.suite);
  if (a.target > 0) s += " --target " + number(a.target);
  if (!a.claims.empty()) s += " --claims " + command_word(a.claims);
  if (!a.networks.empty()) s += " --networks " + command_word(a.networks);
  if (a.workers != std::vector<int>{16, 64}) {
    std::string w;
    for (int n : a.workers) w += (w.empty() ? "" : ",") + std::to_string(n);
    s += " --workers " + w;
  }
  if (a.latency_profile != "10gbe") s += " --latency-profile " + command_word(a.latency_profile);
  s += " --document " + command_word(a.document);
  if (!a.findings.empty()) s += " --findings " + command_word(a.findings);
  return s + "\n# the document and its plots' data again, from the results dump beside it (" +
         document_dump_path(a.document) + "):\nbuild/cedar report --regenerate " +
         command_word(a.document) + "\n";
}

std::string path_from_here(const std::string& path) {
  char buf[4096];
  if (path.empty() || path[0] != '/' || !::getcwd(buf, sizeof buf)) return path;
  const std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  const std::filesystem::path rel = p.lexically_relative(buf);
  return rel.empty() || *rel.begin() == ".." ? path : rel.string();
}

std::string document_dump_path(const std::string& document) {
  std::filesystem::path p(document);
  p.replace_extension(".sql.gz");
  return p.string();
}

std::string repository_db_path(const std::string& db, const std::string& document) {
  const std::filesystem::path p = std::filesystem::path(db).lexically_normal();
  if (!db.empty() && p.is_relative() && *p.begin() != "..") return p.string();
  return "results/" + std::filesystem::path(document).stem().string() + ".db";
}

}  // namespace cedar
