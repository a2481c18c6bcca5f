#pragma once
// Logging for code that sees LibTorch: LibTorch ships its own {fmt} headers, which clash with the
// {fmt} that spdlog is built against, so spdlog stays behind these functions (log.cpp is compiled
// without LibTorch on its include path).
#include <cstdarg>
#include <string>

namespace cedar {

// printf-style formatting into a std::string.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

void log_info(const std::string& message);
void log_warn(const std::string& message);

}  // namespace cedar
