// The cuBLASLt entry points kvsim uses, resolved from libcublasLt at first use (dlopen) instead of at
// program start. libcublasLt is several hundred MB: linking it directly made every `kvsim` command,
// even `kvsim version`, spend about half a second and 200 MB mapping it. With this file, only a process
// that runs a GEMM loads it. Where the library is missing, each function returns
// CUBLAS_STATUS_NOT_INITIALIZED, which the GEMM launcher reports as a Status.
//
// Each definition below has the exact signature cublasLt.h declares (the compiler checks it against the
// header) and forwards to the same symbol in the dlopen'ed library.
#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>

namespace {

void* Library() {
  static void* handle = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    // The loader's search path first, then the standard CUDA install (not on that path by default).
    for (const char* name : {"libcublasLt.so.13", "libcublasLt.so", "/usr/local/cuda/lib64/libcublasLt.so.13",
                             "/usr/local/cuda/lib64/libcublasLt.so"}) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
    }
  });
  return handle;
}

template <typename Fn>
Fn Resolve(const char* name) {
  void* library = Library();
  return library == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

#define KVSIM_FORWARD(name, params, args)                            \
  cublasStatus_t CUBLASWINAPI name params {                          \
    static const auto fn = Resolve<cublasStatus_t(*) params>(#name); \
    return fn == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : fn args;  \
  }

extern "C" {

KVSIM_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
KVSIM_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
KVSIM_FORWARD(cublasLtMatmul,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
               cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
               const void* c, cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
               const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
              (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_bytes,
               stream))
KVSIM_FORWARD(cublasLtMatmulAlgoGetHeuristic,
              (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
               cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
               cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
               int* returned),
              (handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results, returned))
KVSIM_FORWARD(cublasLtMatmulDescCreate,
              (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute_type, cudaDataType_t scale_type),
              (desc, compute_type, scale_type))
KVSIM_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
KVSIM_FORWARD(cublasLtMatmulDescSetAttribute,
              (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size),
              (desc, attr, buf, size))
KVSIM_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
KVSIM_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
KVSIM_FORWARD(cublasLtMatmulPreferenceSetAttribute,
              (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
               size_t size),
              (pref, attr, buf, size))
KVSIM_FORWARD(cublasLtMatrixLayoutCreate,
              (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
              (layout, type, rows, cols, ld))
KVSIM_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))

}  // extern "C"
