#pragma once
// What docs/network_validation.md was written from, recorded in the document as one HTML comment
// so that `cedar network validate --regenerate DOC` writes it again from the data beside it:
// <DOC's stem>-data/ holds each results database as an SQL dump (<database's stem>.sql.gz,
// results/sql_dump.h) and a copy of each profile file (its own file name). Paths are as the
// command was given them, relative to the repository's root. No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

struct LinkValidationArguments {
  std::vector<std::string> databases;  // one per rate
  std::vector<std::string> profiles;   // files of `cedar network calibrate --cluster virtual`
  std::string suite;                   // only this suite ("" : every suite)
  int warmup = 2;
  double target = 0.15;
  std::string findings;  // a hand-written findings file included in the document ("" : none)
  std::string document;  // where the document goes
};

// "<!-- cedar network validate arguments: {...} -->", one line.
std::string link_validation_arguments_comment(const LinkValidationArguments& a);
// The arguments recorded in a document's text. Throws std::runtime_error naming `path` when it
// holds none.
LinkValidationArguments read_link_validation_arguments(const std::string& text,
                                                       const std::string& path);

// The command that writes the document, as typed at the repository's root.
std::string link_validation_command(const LinkValidationArguments& a);

// The data folder beside a document (docs/x.md → docs/x-data), a database's dump in it, and a
// profile file's copy in it. Throws std::invalid_argument when two databases or two profile
// files share a file name (their copies would collide).
std::string link_validation_data_dir(const std::string& document);
std::string link_validation_dump_path(const std::string& document, const std::string& database);
std::string link_validation_profile_copy(const std::string& document, const std::string& profile);
void check_distinct_file_names(const LinkValidationArguments& a);

}  // namespace cedar
