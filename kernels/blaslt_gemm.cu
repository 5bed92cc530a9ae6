// CUDA implementation of kernels/blaslt_gemm.h. Row-major C = A . B is computed as the column-major
// product C^T = B^T . A^T, which needs no transposes: a row-major [r][c] array is a column-major c x r one.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <tuple>

#include "kernels/blaslt_gemm.h"
#include "kernels/cuda_status.h"

namespace kvsim {
namespace {

absl::Status BlasStatus(cublasStatus_t status, const char* expr, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(std::string("kernels/blaslt_gemm.cu:") + std::to_string(line) + ": " + expr +
                             ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

#define KVSIM_BLAS_RETURN_IF_ERROR(expr)                                             \
  do {                                                                               \
    ::absl::Status kvsim_blas_status_ = BlasStatus((expr), #expr, __LINE__);         \
    if (!kvsim_blas_status_.ok()) return kvsim_blas_status_;                         \
  } while (0)

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // column-major operands B^T, A^T, C^T
  cublasLtMatmulAlgo_t algo;
  ~Plan() {
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

struct BlasLtGemm::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans;

  ~Impl() {
    plans.clear();
    if (workspace != nullptr) cudaFree(workspace);
    if (handle != nullptr) cublasLtDestroy(handle);
  }

  absl::StatusOr<Plan*> GetPlan(int64_t m, int64_t n, int64_t k) {
    auto& slot = plans[{m, n, k}];
    if (slot != nullptr) return slot.get();
    auto plan = std::make_unique<Plan>();
    KVSIM_BLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    KVSIM_BLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, n, k, n));
    KVSIM_BLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, k, m, k));
    KVSIM_BLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->c, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref;
    KVSIM_BLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = static_cast<size_t>(workspace_bytes);
    cublasLtMatmulHeuristicResult_t result;
    int count = 0;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                            sizeof(ws));
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatmulAlgoGetHeuristic(handle, plan->op, plan->a, plan->b, plan->c, plan->c, pref, 1, &result,
                                         &count);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    KVSIM_BLAS_RETURN_IF_ERROR(s);
    if (count == 0) {
      return absl::NotFoundError("cuBLASLt has no algorithm for a bf16 GEMM of " + std::to_string(m) + " x " +
                                 std::to_string(n) + " x " + std::to_string(k));
    }
    plan->algo = result.algo;
    slot = std::move(plan);
    return slot.get();
  }
};

BlasLtGemm::BlasLtGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlasLtGemm::~BlasLtGemm() = default;

absl::StatusOr<std::unique_ptr<BlasLtGemm>> BlasLtGemm::Create(int64_t workspace_bytes) {
  int count = 0;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  auto impl = std::make_unique<Impl>();
  KVSIM_BLAS_RETURN_IF_ERROR(cublasLtCreate(&impl->handle));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&impl->workspace, workspace_bytes));
  impl->workspace_bytes = workspace_bytes;
  return std::unique_ptr<BlasLtGemm>(new BlasLtGemm(std::move(impl)));
}

absl::Status BlasLtGemm::Run(int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c) {
  if (m < 1 || n < 1 || k < 1) return absl::InvalidArgumentError("GEMM: m, n and k must be >= 1");
  absl::StatusOr<Plan*> plan = impl_->GetPlan(m, n, k);
  if (!plan.ok()) return plan.status();
  const float alpha = 1.f, beta = 0.f;
  KVSIM_BLAS_RETURN_IF_ERROR(cublasLtMatmul(impl_->handle, (*plan)->op, &alpha, b, (*plan)->a, a, (*plan)->b, &beta,
                                            c, (*plan)->c, c, (*plan)->c, &(*plan)->algo, impl_->workspace,
                                            static_cast<size_t>(impl_->workspace_bytes), 0));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace kvsim
