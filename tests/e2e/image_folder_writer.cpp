// Writes an ImageFolder tree of real JPEGs for the end-to-end tests (tests/e2e/imagenette_test.sh):
//   image_folder_writer ROOT SPLIT PER_CLASS WIDTH HEIGHT WNID...
// gives ROOT/SPLIT/<wnid>/<wnid>_<k>.JPEG, PER_CLASS solid-colour WIDTH x HEIGHT images per class,
// the colour telling the class (and varying a little with k), through tests/unit/testdata_writers.
#include <array>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tests/unit/testdata_writers.h"

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s ROOT SPLIT PER_CLASS WIDTH HEIGHT WNID...\n", argv[0]);
    return 2;
  }
  try {
    const int per_class = std::stoi(argv[3]), width = std::stoi(argv[4]),
              height = std::stoi(argv[5]);
    std::vector<cedar::testdata::FolderClass> classes;
    for (int c = 6; c < argc; ++c) {
      cedar::testdata::FolderClass cls{argv[c], {}};
      const int i = c - 6;
      for (int k = 0; k < per_class; ++k)
        cls.colours.push_back({static_cast<uint8_t>(37 * i + 3 * k), static_cast<uint8_t>(91 * i),
                               static_cast<uint8_t>(255 - 23 * i)});
      classes.push_back(std::move(cls));
    }
    cedar::testdata::write_image_folder(argv[1], argv[2], classes, width, height);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "image_folder_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
