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
  const int rc = RUN_ALL_TESTS();
  // A skip is not a pass: on a machine with GPUs, say how many tests skipped, and when every
  // test that ran skipped, report the binary as skipped (77), never as passed.
  const auto& u = *::testing::UnitTest::GetInstance();
  const int ran = u.test_to_run_count(), skipped = u.skipped_test_count();
  if (skipped > 0)
    std::printf("GPU tests: %d of %d skipped on a machine with %d GPU(s) (reasons above)\n", skipped,
                ran, cco::rt::device_count());
  if (rc == 0 && ran > 0 && skipped == ran) {
    std::printf("SKIPPED: every test skipped although GPUs are present\n");
    return 77;
  }
  return rc;
}
