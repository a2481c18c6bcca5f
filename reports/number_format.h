#pragma once
// One number written with a printf format ("%.2f", "%.3g") for the reports' tables and documents.
// No LibTorch here.
#include <string>

namespace cedar {

std::string fmt(const char* format, double value);

}  // namespace cedar
