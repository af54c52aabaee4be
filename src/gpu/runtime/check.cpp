#include "runtime/check.hpp"

#include <cstring>

namespace cco::rt {

[[noreturn]] void throw_error(const char* file, int line, const char* call, const std::string& msg) {
  const char* base = std::strrchr(file, '/');
  throw Error(std::string(base ? base + 1 : file) + ":" + std::to_string(line) + ": " + call +
              ": " + msg);
}

}  // namespace cco::rt
