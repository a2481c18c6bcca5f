#pragma once
// What a report document was generated with, recorded in the document itself as one HTML comment
// (invisible when rendered) so that `cedar report --regenerate DOC` can write it again from the
// results dump beside it (DOC's name with .sql.gz for .md, results/sql_dump.h). Only what shapes
// the document is recorded; every path is relative to the repository's root, where cedar report
// runs. No LibTorch here.
#include <string>
#include <vector>

namespace cedar {

struct DocumentArguments {
  std::string db;  // the results database the commands name (inside the repository)
  std::string suite, claims, findings, networks, document;
  std::string latency_profile = "10gbe";
  double target = 0;
  std::vector<int> workers = {16, 64};
};

// "<!-- cedar report arguments: {...} -->", one line.
std::string document_arguments_comment(const DocumentArguments& a);
// The arguments recorded in a document's text. Throws std::runtime_error naming `path` when the
// document holds none (written before they were recorded, or by hand).
DocumentArguments read_document_arguments(const std::string& text, const std::string& path);

// What an HTML comment of a document records: the text between `lead` and the last " -->" on
// the line where `lead` first occurs ("" when there is no such line). Both the report's and
// `cedar network validate`'s documents record their arguments this way, as JSON.
std::string recorded_comment(const std::string& text, const std::string& lead);

// The commands that make the runs and write the document, one per line, as a user types them
// at the repository's root.
std::string document_commands(const DocumentArguments& a);

// The results dump beside a document: docs/x.md → docs/x.sql.gz.
std::string document_dump_path(const std::string& document);

// `db` as the commands show it: as given when it is a relative path inside the repository, else
// results/<the document's name>.db (an absolute path or one above the root, e.g. under /tmp,
// would not reproduce anywhere else).
std::string repository_db_path(const std::string& db, const std::string& document);

// `path` relative to the current folder (the repository's root) when it is an absolute path
// inside it; otherwise as given.
std::string path_from_here(const std::string& path);

// A word for a shell command line, quoted where it needs it.
std::string command_word(const std::string& s);

}  // namespace cedar
