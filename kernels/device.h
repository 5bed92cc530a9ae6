// File: kernels/device.h
//
// The GPU seen from plain C++ (no CUDA types): whether one is usable, its properties, and kvsim's
// device-to-device copy kernel, whose bandwidth is the memory ceiling the calibration compares kernels
// against. Built from device.cu where nvcc exists; elsewhere device_cpu.cc provides the same functions,
// reporting that no GPU is available.
//
// Example:
//   if (!CudaDeviceAvailable()) return;  // skip GPU work
//   KVSIM_ASSIGN_OR_RETURN(DeviceProperties props, QueryDevice(0));
//
// Thread-safety: functions may be called from any thread; each uses the current CUDA device.
#ifndef KVSIM_KERNELS_DEVICE_H_
#define KVSIM_KERNELS_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvsim {

// True if this binary was built with CUDA and a device can be used now.
bool CudaDeviceAvailable();

struct DeviceProperties {
  std::string name;            // e.g. "NVIDIA H200"
  int compute_capability = 0;  // major x 10 + minor, e.g. 90
  int num_sms = 0;
  int64_t l2_cache_bytes = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;         // CUDA driver API version, e.g. 13000
  int runtime_version = 0;        // CUDA runtime version this binary was built with
  int sm_clock_khz = 0;           // peak SM clock as reported
  int memory_clock_khz = 0;       // peak memory clock as reported
  int64_t free_memory_bytes = 0;  // free device memory at the query
};

// Properties of device `ordinal`. Unavailable where there is no CUDA or no such device.
absl::StatusOr<DeviceProperties> QueryDevice(int ordinal);

// Copies `input` to the device, through the copy kernel into a second (poisoned) device buffer, and back.
// For tests of the kernel against a host copy. Unavailable without a GPU.
absl::StatusOr<std::vector<uint8_t>> DeviceCopyRoundTrip(const std::vector<uint8_t>& input);

// The device-to-device copy ceiling on `num_bytes` (rounded down to 16 bytes), in bytes moved (read +
// written) per second: the faster median over `iterations` timed runs of the copy kernel and of
// cudaMemcpyAsync. REQUIRES: num_bytes >= 16, iterations >= 1.
absl::StatusOr<double> MeasureCopyBandwidth(int64_t num_bytes, int iterations);

// Device memory owned by this object (move-only); freed on destruction. Every operation is synchronous
// with respect to the host except where stated.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(bytes));
//   KVSIM_RETURN_IF_ERROR(buf.CopyFromHost(host.data(), bytes));
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  // REQUIRES: size_bytes >= 0. Zero bytes gives an empty buffer with a null pointer.
  static absl::StatusOr<DeviceBuffer> Allocate(int64_t size_bytes);
  // Allocates and copies `size_bytes` from `host`.
  static absl::StatusOr<DeviceBuffer> FromHost(const void* host, int64_t size_bytes);

  void* get() const { return ptr_; }
  int64_t size_bytes() const { return size_bytes_; }
  // REQUIRES: size_bytes <= this->size_bytes().
  absl::Status CopyFromHost(const void* host, int64_t size_bytes);
  absl::Status CopyToHost(void* host, int64_t size_bytes) const;
  // Sets every byte to `value` (poisoning outputs before a kernel writes them: 0xFF gives NaN floats).
  absl::Status Fill(uint8_t value);

 private:
  void* ptr_ = nullptr;
  int64_t size_bytes_ = 0;
};

// Waits for all device work; the first asynchronous error of earlier launches surfaces here.
absl::Status DeviceSynchronize();

// Elapsed device time between two points of the default stream, by CUDA events.
class DeviceTimer {
 public:
  DeviceTimer() = default;
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  ~DeviceTimer();
  absl::Status Start();
  // Milliseconds since Start(); waits for the work in between.
  absl::StatusOr<double> StopMs();

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// Fills `size_bytes` of device memory at `ptr` with `value` (for L2 flushes and poisoning).
absl::Status DeviceMemset(void* ptr, uint8_t value, int64_t size_bytes);

// Fills device memory with deterministic pseudo-random data derived from `seed` (a hash of the index; no
// zeros patterns, no NaN): kBf16 writes bf16 values uniform in [-1, 1); kBytes random bytes with each byte
// AND-ed with `byte_mask` (0xB7 keeps fp8 e4m3 codes finite and below 2); kFloat floats uniform in
// [lo, hi). `size_bytes` is rounded down to the element size. For timing runs on data that looks real.
enum class FillKind { kBf16, kBytes, kFloat };
absl::Status DeviceFillRandom(void* ptr, int64_t size_bytes, FillKind kind, uint64_t seed, uint8_t byte_mask = 0xff,
                              float lo = 0.f, float hi = 1.f);

// Pinned (page-locked) host memory of `size_bytes`, for host<->device copy timing; freed on destruction.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;
  ~PinnedHostBuffer();
  absl::Status Allocate(int64_t size_bytes);
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

// Asynchronous copy on the default stream (for timing between DeviceTimer points).
absl::Status CopyAsync(void* dst, const void* src, int64_t size_bytes, bool host_to_device);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_DEVICE_H_
