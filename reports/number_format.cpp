#include "reports/number_format.h"

#include <cstdio>

namespace cedar {

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace cedar
