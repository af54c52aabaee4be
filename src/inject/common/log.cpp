#include "common/log.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>

namespace cco::preload {
namespace {

std::atomic<LogSink> g_sink{nullptr};

// Never destroyed: used until the last exit hook (and from NCCL's finalizers in the tuner).
std::mutex& warn_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::set<std::string>& warned() {
  static auto* s = new std::set<std::string>();  // never destroyed: used until the last exit hook
  return *s;
}

void write_all(const std::string& line) {
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(2, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void set_log_sink(LogSink sink) {
  g_sink.store(sink);
}

void write_line(const std::string& line) {
  if (LogSink s = g_sink.load())
    s(line);
  else
    write_all(line);
}

void log_line(std::string_view msg) {
  std::string line = "cco-preload: ";
  line += msg;
  line += '\n';
  write_line(line);
}

bool first_time(std::string_view key) {
  std::lock_guard<std::mutex> lock(warn_mutex());
  return warned().insert(std::string(key)).second;
}

bool warn_once(std::string_view key, std::string_view msg) {
  if (!first_time(key)) return false;
  std::string m = "warning: ";
  m += msg;
  log_line(m);
  return true;
}

void reset_warnings() {
  std::lock_guard<std::mutex> lock(warn_mutex());
  warned().clear();
}

std::string cu_error_text(int result) {
  const char* name = nullptr;
  switch (result) {
    case 0:
      name = "CUDA_SUCCESS";
      break;
    case 1:
      name = "CUDA_ERROR_INVALID_VALUE";
      break;
    case 2:
      name = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case 3:
      name = "CUDA_ERROR_NOT_INITIALIZED";
      break;
    case 4:
      name = "CUDA_ERROR_DEINITIALIZED";
      break;
    case 100:
      name = "CUDA_ERROR_NO_DEVICE";
      break;
    case 101:
      name = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case 201:
      name = "CUDA_ERROR_INVALID_CONTEXT";
      break;
    case 400:
      name = "CUDA_ERROR_INVALID_HANDLE";
      break;
    case 500:
      name = "CUDA_ERROR_NOT_FOUND";
      break;
    case 700:
      name = "CUDA_ERROR_ILLEGAL_ADDRESS";
      break;
    case 701:
      name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
      break;
    case 801:
      name = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    case 900:
      name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
      break;
    case 901:
      name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
      break;
    default:
      break;
  }
  return std::string(name ? name : "CUDA error") + " (" + std::to_string(result) + ")";
}

}  // namespace cco::preload
