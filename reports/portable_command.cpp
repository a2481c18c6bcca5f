#include "reports/portable_command.h"

#include <vector>

#include "reports/document_arguments.h"

namespace cedar {
namespace {

// A shell word as recorded (quotes included) and as the program receives it.
struct Word {
  std::string raw, value;
};

// Splits at spaces outside single or double quotes (backslash escapes outside single quotes).
std::vector<Word> words(const std::string& command) {
  std::vector<Word> out;
  Word w;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (!quote && c == ' ') {
      if (in_word) out.push_back(w);
      w = {};
      in_word = false;
      continue;
    }
    in_word = true;
    w.raw += c;
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (quote == '"' && c == '\\' && i + 1 < command.size()) {
        w.raw += command[++i];
        w.value += command[i];
      } else {
        w.value += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\' && i + 1 < command.size()) {
      w.raw += command[++i];
      w.value += command[i];
    } else {
      w.value += c;
    }
  }
  if (in_word) out.push_back(w);
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string portable_command(const std::string& command, const std::string& db,
                             const std::string& experiment) {
  std::vector<Word> ws = words(command);
  for (size_t i = 0; i < ws.size(); ++i) {
    Word& w = ws[i];
    if (i == 0 && (w.value == "cedar" || ends_with(w.value, "/cedar"))) {
      w.raw = "build/cedar";
    } else if (i > 0 && ws[i - 1].value == "--db") {
      w.raw = command_word(db);
    } else if (w.value.rfind("--db=", 0) == 0) {
      w.raw = "--db=" + command_word(db);
    } else if (!experiment.empty() && !w.value.empty() && w.value[0] == '/' &&
               ends_with(w.value, "/" + experiment)) {
      w.raw = command_word(experiment);
    }
  }
  std::string out;
  for (const auto& w : ws) out += (out.empty() ? "" : " ") + w.raw;
  return out;
}

}  // namespace cedar
