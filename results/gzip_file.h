#pragma once
// Whole files through zlib's gzip format: the results dumps committed beside the reports
// (docs/<name>.sql.gz). The gzip header zlib writes carries no file name and no time, so the
// same text gives the same bytes.
#include <string>

namespace cedar {

// Writes `text` to `path` compressed (level 9): to a temporary file beside it, then renamed over
// it. Throws std::runtime_error naming the path on failure.
void write_gzip_file(const std::string& path, const std::string& text);
// The inflated contents of `path` (a file that is not gzip is read as it is). Throws
// std::runtime_error naming the path when it cannot be read or is corrupt.
std::string read_gzip_file(const std::string& path);

}  // namespace cedar
