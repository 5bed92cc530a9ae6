// kernels/blaslt_gemm.h for builds without CUDA.
#include "kernels/blaslt_gemm.h"

namespace kvsim {

struct BlasLtGemm::Impl {};

BlasLtGemm::BlasLtGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlasLtGemm::~BlasLtGemm() = default;

absl::StatusOr<std::unique_ptr<BlasLtGemm>> BlasLtGemm::Create(int64_t) {
  return absl::UnavailableError("this kvsim was built without CUDA (no nvcc at build time, or KVSIM_NO_CUDA=1)");
}

absl::Status BlasLtGemm::Run(int64_t, int64_t, int64_t, const void*, const void*, void*) {
  return absl::UnavailableError("this kvsim was built without CUDA");
}

}  // namespace kvsim
