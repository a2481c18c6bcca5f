#pragma once
// A whole file as text, for the documents, findings and profiles the report commands read.
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cedar {

// The contents of `path`; throws std::runtime_error naming the path and `what` it was meant to be.
inline std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the " + what);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cedar
