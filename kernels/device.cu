// CUDA implementation of kernels/device.h.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda_status.h"
#include "kernels/device.h"

namespace kvsim {
namespace {

// Grid-stride copy with 16-byte vector accesses: each thread keeps several loads in flight.
__global__ void CopyKernel(const uint4* __restrict__ src, uint4* __restrict__ dst, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = src[i];
  }
}

absl::Status LaunchCopy(const void* src, void* dst, int64_t num_bytes, int num_sms) {
  const int64_t n = num_bytes / 16;
  const int threads = 512;
  const int64_t blocks_needed = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(std::min<int64_t>(blocks_needed, int64_t{num_sms} * 8));
  if (blocks == 0) return absl::OkStatus();
  CopyKernel<<<blocks, threads>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

// Frees device buffers on every path.
struct DeviceBuffers {
  void* a = nullptr;
  void* b = nullptr;
  ~DeviceBuffers() {
    if (a != nullptr) cudaFree(a);
    if (b != nullptr) cudaFree(b);
  }
};

}  // namespace

bool CudaDeviceAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

absl::StatusOr<DeviceProperties> QueryDevice(int ordinal) {
  cudaDeviceProp prop;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal));
  DeviceProperties out;
  out.name = prop.name;
  out.compute_capability = prop.major * 10 + prop.minor;
  out.num_sms = prop.multiProcessorCount;
  out.l2_cache_bytes = prop.l2CacheSize;
  out.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaDriverGetVersion(&out.driver_version));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaRuntimeGetVersion(&out.runtime_version));
  return out;
}

absl::StatusOr<std::vector<uint8_t>> DeviceCopyRoundTrip(const std::vector<uint8_t>& input) {
  if (input.size() % 16 != 0) {
    return absl::InvalidArgumentError("DeviceCopyRoundTrip: size must be a multiple of 16 bytes");
  }
  absl::StatusOr<DeviceProperties> props = QueryDevice(0);
  if (!props.ok()) return props.status();
  DeviceBuffers buffers;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffers.a, input.size()));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffers.b, input.size()));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffers.a, input.data(), input.size(), cudaMemcpyHostToDevice));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemset(buffers.b, 0xA5, input.size()));  // poison the output
  absl::Status launched = LaunchCopy(buffers.a, buffers.b, input.size(), props->num_sms);
  if (!launched.ok()) return launched;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  std::vector<uint8_t> output(input.size());
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemcpy(output.data(), buffers.b, input.size(), cudaMemcpyDeviceToHost));
  return output;
}

absl::StatusOr<double> MeasureCopyBandwidth(int64_t num_bytes, int iterations) {
  num_bytes -= num_bytes % 16;
  if (num_bytes < 16 || iterations < 1) {
    return absl::InvalidArgumentError("MeasureCopyBandwidth: need num_bytes >= 16 and iterations >= 1");
  }
  absl::StatusOr<DeviceProperties> props = QueryDevice(0);
  if (!props.ok()) return props.status();
  DeviceBuffers buffers;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffers.a, num_bytes));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffers.b, num_bytes));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemset(buffers.a, 1, num_bytes));
  cudaEvent_t start, stop;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  std::vector<float> times_ms;
  absl::Status status = LaunchCopy(buffers.a, buffers.b, num_bytes, props->num_sms);  // warm-up
  for (int i = 0; status.ok() && i < iterations; ++i) {
    cudaEventRecord(start);
    status = LaunchCopy(buffers.a, buffers.b, num_bytes, props->num_sms);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times_ms.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  std::sort(times_ms.begin(), times_ms.end());
  const double median_s = times_ms[times_ms.size() / 2] * 1e-3;
  return 2.0 * static_cast<double>(num_bytes) / median_s;
}

}  // namespace kvsim
