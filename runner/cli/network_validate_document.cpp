// `cedar network validate --document` and `--regenerate` (runner/cli/network_validate_document.h).
#include "runner/cli/network_validate_document.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "reports/link_validation.h"
#include "results/gzip_file.h"
#include "results/sql_dump.h"
#include "runner/cli/temporary_folder.h"
#include "runner/cli/text_file.h"

namespace cedar {
namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!(out << text)) throw std::runtime_error(path + ": cannot write it");
}

// The validation of `real` databases and profile files, its profiles shown as `shown` names them.
LinkValidation validate_shown(const LinkValidationArguments& shown,
                              const std::vector<std::string>& real_databases,
                              const std::vector<std::string>& real_profiles) {
  LinkValidation v =
      validate_links(real_databases, real_profiles, shown.suite, shown.warmup, shown.target);
  for (auto& p : v.profiles)
    for (size_t i = 0; i < real_profiles.size(); ++i)
      if (p.file == real_profiles[i]) p.file = shown.profiles[i];
  return v;
}

}  // namespace

void write_link_validation_with_data(const LinkValidationArguments& a, bool render) {
  check_distinct_file_names(a);
  const LinkValidation v = validate_shown(a, a.databases, a.profiles);
  std::fputs(render_link_validation_markdown(v).c_str(), stdout);
  for (const auto& n : v.notes) std::fprintf(stderr, "cedar network validate: %s\n", n.c_str());
  LinkValidationDocument d;
  d.path = a.document;
  d.shown = a;
  d.render = render;
  if (!a.findings.empty()) d.findings = read_text_file(a.findings, "findings file");
  write_link_validation_document(v, d);
  const std::string data = link_validation_data_dir(a.document);
  fs::create_directories(data);
  for (const auto& db : a.databases)
    write_gzip_file(link_validation_dump_path(a.document, db), dump_suite_sql(db, a.suite));
  for (const auto& p : a.profiles)
    write_text(link_validation_profile_copy(a.document, p), read_text_file(p, "profile file"));
  std::fprintf(stderr,
               "cedar network validate: %s written, plots beside it, its databases' dumps and "
               "profiles in %s/\n",
               a.document.c_str(), data.c_str());
}

void regenerate_link_validation(const std::string& document, const std::string& output_dir) {
  const LinkValidationArguments a =
      read_link_validation_arguments(read_text_file(document, "document"), document);
  check_distinct_file_names(a);
  TemporaryFolder tmp;
  std::vector<std::string> databases, profiles;
  for (const auto& db : a.databases) {
    const std::string dump = link_validation_dump_path(document, db);
    if (!fs::exists(dump))
      throw std::runtime_error(document + ": no dump " + dump + " of " + db +
                               ": write the document with cedar network validate --document");
    databases.push_back(tmp.path + "/" + fs::path(db).filename().string());
    load_sql_dump(read_gzip_file(dump), databases.back());
  }
  for (const auto& p : a.profiles) {
    profiles.push_back(link_validation_profile_copy(document, p));
    if (!fs::exists(profiles.back()))
      throw std::runtime_error(document + ": no copy " + profiles.back() + " of profile file " + p +
                               ": write the document with cedar network validate --document");
  }
  const LinkValidation v = validate_shown(a, databases, profiles);
  LinkValidationDocument d;
  d.shown = a;
  d.path = document;
  if (!output_dir.empty()) {
    fs::create_directories(output_dir);
    d.path = (fs::path(output_dir) / fs::path(document).filename()).string();
    d.render = false;
  }
  if (!a.findings.empty()) d.findings = read_text_file(a.findings, "findings file");
  write_link_validation_document(v, d);
  std::fprintf(stderr, "cedar network validate: %s written again from %s/\n", d.path.c_str(),
               link_validation_data_dir(document).c_str());
}

}  // namespace cedar
