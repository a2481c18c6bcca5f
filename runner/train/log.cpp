#include "runner/train/log.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <vector>

namespace cedar {

std::string strprintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::vector<char> buf(static_cast<size_t>(n > 0 ? n : 0) + 1);
  std::vsnprintf(buf.data(), buf.size(), format, args);
  va_end(args);
  return std::string(buf.data(), static_cast<size_t>(n > 0 ? n : 0));
}

void log_info(const std::string& message) { spdlog::info("{}", message); }
void log_warn(const std::string& message) { spdlog::warn("{}", message); }

}  // namespace cedar
