// Error checking for the C++ layers: a failed CUDA, NCCL or cuBLAS call throws cco::rt::Error
// carrying file:line and the library's own message; main() catches it once and prints one line.
#pragma once

#include <stdexcept>
#include <string>

namespace cco::rt {

/// A failed GPU-library call. what() is "file:line: call: message".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_error(const char* file, int line, const char* call, const std::string& msg);

/// "cuBLAS status N", and why cuBLASLt could not be loaded where that is the cause (lazy.hpp).
std::string cublas_status_text(int status);

}  // namespace cco::rt

#define CCO_CUDA_CHECK(call)                                                         \
  do {                                                                               \
    cudaError_t cco_e_ = (call);                                                     \
    if (cco_e_ != cudaSuccess)                                                       \
      ::cco::rt::throw_error(__FILE__, __LINE__, #call, cudaGetErrorString(cco_e_)); \
  } while (0)

#define CCO_NCCL_CHECK(call)                                                          \
  do {                                                                                \
    ncclResult_t cco_r_ = (call);                                                     \
    if (cco_r_ != ncclSuccess && cco_r_ != ncclInProgress)                            \
      ::cco::rt::throw_error(__FILE__, __LINE__, #call, ncclGetErrorString(cco_r_));  \
  } while (0)

#define CCO_CUBLAS_CHECK(call)                                                        \
  do {                                                                                \
    cublasStatus_t cco_s_ = (call);                                                   \
    if (cco_s_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::cco::rt::throw_error(__FILE__, __LINE__, #call,                               \
                             ::cco::rt::cublas_status_text(static_cast<int>(cco_s_)));  \
  } while (0)
