// File: kernels/blaslt_gemm.h
//
// Row-major bf16 matrix products through cuBLASLt (libcublasLt, linked dynamically from the CUDA
// installation): C[m][n] = A[m][k] . B[k][n], fp32 accumulation, bf16 output, default stream. Plans
// (descriptors and the heuristic's algorithm) are cached per shape, so a timed Run launches only the
// product. Without CUDA, Create returns Unavailable.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<BlasLtGemm> gemm, BlasLtGemm::Create());
//   KVSIM_RETURN_IF_ERROR(gemm->Run(m, n, k, a, b, c));  // device pointers
//
// Thread-safety: one thread at a time per object.
#ifndef KVSIM_KERNELS_BLASLT_GEMM_H_
#define KVSIM_KERNELS_BLASLT_GEMM_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace kvsim {

class BlasLtGemm {
 public:
  static absl::StatusOr<std::unique_ptr<BlasLtGemm>> Create(int64_t workspace_bytes = int64_t{32} << 20);
  ~BlasLtGemm();
  BlasLtGemm(const BlasLtGemm&) = delete;
  BlasLtGemm& operator=(const BlasLtGemm&) = delete;

  // Launches C = A . B (asynchronous). REQUIRES: m, n, k >= 1; device pointers to bf16 arrays of
  // m x k, k x n and m x n values, 16-byte aligned.
  absl::Status Run(int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c);

  struct Impl;

 private:
  explicit BlasLtGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvsim

#endif  // KVSIM_KERNELS_BLASLT_GEMM_H_
