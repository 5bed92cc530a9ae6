// File: kernels/cuda_status.h
//
// CUDA runtime errors as absl::Status carrying the file and line of the failing call. Include only from
// .cu files.
//
// Example:
//   KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, bytes));
#ifndef KVSIM_KERNELS_CUDA_STATUS_H_
#define KVSIM_KERNELS_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include <string>

#include "absl/status/status.h"

namespace kvsim {

inline absl::Status CudaStatus(cudaError_t error, const char* expr, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message = std::string(file) + ":" + std::to_string(line) + ": " + expr + ": " +
                              cudaGetErrorName(error) + ": " + cudaGetErrorString(error);
  return error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ? absl::UnavailableError(message)
                                                                            : absl::InternalError(message);
}

}  // namespace kvsim

#define KVSIM_CUDA_RETURN_IF_ERROR(expr)                                                        \
  do {                                                                                          \
    ::absl::Status kvsim_cuda_status_ = ::kvsim::CudaStatus((expr), #expr, __FILE__, __LINE__); \
    if (!kvsim_cuda_status_.ok()) return kvsim_cuda_status_;                                    \
  } while (0)

#endif  // KVSIM_KERNELS_CUDA_STATUS_H_
