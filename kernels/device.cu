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

__device__ __forceinline__ uint32_t HashIndex(uint64_t i, uint64_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x >> 16);
}

__device__ __forceinline__ float Uniform(uint64_t i, uint64_t seed, float lo, float hi) {
  return lo + (hi - lo) * (HashIndex(i, seed) >> 8) * (1.0f / 16777216.0f);
}

__global__ void FillKernel(void* ptr, int64_t n, int kind, uint64_t seed, uint32_t byte_mask, float lo, float hi) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (kind == 0) {
      const float x = Uniform(i, seed, -1.f, 1.f);
      static_cast<uint16_t*>(ptr)[i] = static_cast<uint16_t>(__float_as_uint(x) >> 16);
    } else if (kind == 1) {
      static_cast<uint8_t*>(ptr)[i] = static_cast<uint8_t>(HashIndex(i, seed) & byte_mask);
    } else {
      static_cast<float*>(ptr)[i] = Uniform(i, seed, lo, hi);
    }
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
  KVSIM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&out.sm_clock_khz, cudaDevAttrClockRate, ordinal));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&out.memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  size_t free_bytes = 0, total_bytes = 0;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  out.free_memory_bytes = static_cast<int64_t>(free_bytes);
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
  // Two copies, the kernel above and the driver's cudaMemcpyAsync; the faster median is the ceiling.
  double best_median_s = 0;
  absl::Status status;
  for (bool driver_copy : {false, true}) {
    auto copy = [&]() -> absl::Status {
      if (driver_copy) {
        KVSIM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buffers.b, buffers.a, num_bytes, cudaMemcpyDeviceToDevice));
        return absl::OkStatus();
      }
      return LaunchCopy(buffers.a, buffers.b, num_bytes, props->num_sms);
    };
    std::vector<float> times_ms;
    status.Update(copy());  // warm-up
    for (int i = 0; status.ok() && i < iterations; ++i) {
      cudaEventRecord(start);
      status.Update(copy());
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      times_ms.push_back(ms);
    }
    if (!status.ok()) break;
    std::sort(times_ms.begin(), times_ms.end());
    const double median_s = times_ms[times_ms.size() / 2] * 1e-3;
    if (best_median_s == 0 || median_s < best_median_s) best_median_s = median_s;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  return 2.0 * static_cast<double>(num_bytes) / best_median_s;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), size_bytes_(other.size_bytes_) {
  other.ptr_ = nullptr;
  other.size_bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = other.ptr_;
    size_bytes_ = other.size_bytes_;
    other.ptr_ = nullptr;
    other.size_bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(int64_t size_bytes) {
  if (size_bytes < 0) return absl::InvalidArgumentError("DeviceBuffer: negative size");
  DeviceBuffer buffer;
  if (size_bytes == 0) return buffer;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffer.ptr_, size_bytes));
  buffer.size_bytes_ = size_bytes;
  return buffer;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::FromHost(const void* host, int64_t size_bytes) {
  absl::StatusOr<DeviceBuffer> buffer = Allocate(size_bytes);
  if (!buffer.ok()) return buffer.status();
  absl::Status copied = buffer->CopyFromHost(host, size_bytes);
  if (!copied.ok()) return copied;
  return buffer;
}

absl::Status DeviceBuffer::CopyFromHost(const void* host, int64_t size_bytes) {
  if (size_bytes > size_bytes_) return absl::InvalidArgumentError("DeviceBuffer::CopyFromHost: too many bytes");
  if (size_bytes == 0) return absl::OkStatus();
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemcpy(ptr_, host, size_bytes, cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

absl::Status DeviceBuffer::CopyToHost(void* host, int64_t size_bytes) const {
  if (size_bytes > size_bytes_) return absl::InvalidArgumentError("DeviceBuffer::CopyToHost: too many bytes");
  if (size_bytes == 0) return absl::OkStatus();
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemcpy(host, ptr_, size_bytes, cudaMemcpyDeviceToHost));
  return absl::OkStatus();
}

absl::Status DeviceBuffer::Fill(uint8_t value) { return DeviceMemset(ptr_, value, size_bytes_); }

absl::Status DeviceSynchronize() {
  KVSIM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

DeviceTimer::~DeviceTimer() {
  if (start_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

absl::Status DeviceTimer::Start() {
  if (start_ == nullptr) {
    cudaEvent_t start, stop;
    KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
    start_ = start;
    KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
    stop_ = stop;
  }
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(static_cast<cudaEvent_t>(start_)));
  return absl::OkStatus();
}

absl::StatusOr<double> DeviceTimer::StopMs() {
  if (start_ == nullptr) return absl::FailedPreconditionError("DeviceTimer::StopMs before Start");
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(static_cast<cudaEvent_t>(stop_)));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  float ms = 0;
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return static_cast<double>(ms);
}

absl::Status DeviceMemset(void* ptr, uint8_t value, int64_t size_bytes) {
  if (size_bytes == 0) return absl::OkStatus();
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMemset(ptr, value, size_bytes));
  return absl::OkStatus();
}

absl::Status DeviceFillRandom(void* ptr, int64_t size_bytes, FillKind kind, uint64_t seed, uint8_t byte_mask,
                              float lo, float hi) {
  const int element = kind == FillKind::kBf16 ? 2 : kind == FillKind::kBytes ? 1 : 4;
  const int64_t n = size_bytes / element;
  if (n == 0) return absl::OkStatus();
  const int blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, 132 * 16));
  FillKernel<<<blocks, 256>>>(ptr, n, static_cast<int>(kind), seed, byte_mask, lo, hi);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

PinnedHostBuffer::~PinnedHostBuffer() {
  if (ptr_ != nullptr) cudaFreeHost(ptr_);
}

absl::Status PinnedHostBuffer::Allocate(int64_t size_bytes) {
  if (ptr_ != nullptr) return absl::FailedPreconditionError("PinnedHostBuffer: already allocated");
  KVSIM_CUDA_RETURN_IF_ERROR(cudaMallocHost(&ptr_, size_bytes));
  return absl::OkStatus();
}

absl::Status CopyAsync(void* dst, const void* src, int64_t size_bytes, bool host_to_device) {
  KVSIM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, size_bytes, host_to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
  return absl::OkStatus();
}

}  // namespace kvsim
