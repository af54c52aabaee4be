// main() of every GPU-labelled test: skips (exit 77, which CTest reports as "Skipped") with a
// clear message where no CUDA device is usable, instead of failing for lack of a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "runtime/device.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (cco::rt::device_count(&why) == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine (%s); GPU tests run on the GPU machines "
                "(docs/TESTING.md)\n", why.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
