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
  std::string name;             // e.g. "NVIDIA H200"
  int compute_capability = 0;   // major x 10 + minor, e.g. 90
  int num_sms = 0;
  int64_t l2_cache_bytes = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;       // CUDA driver API version, e.g. 13000
  int runtime_version = 0;      // CUDA runtime version this binary was built with
};

// Properties of device `ordinal`. Unavailable where there is no CUDA or no such device.
absl::StatusOr<DeviceProperties> QueryDevice(int ordinal);

// Copies `input` to the device, through the copy kernel into a second (poisoned) device buffer, and back.
// For tests of the kernel against a host copy. Unavailable without a GPU.
absl::StatusOr<std::vector<uint8_t>> DeviceCopyRoundTrip(const std::vector<uint8_t>& input);

// Median over `iterations` timed launches of the copy kernel on `num_bytes` (rounded down to 16 bytes),
// in bytes moved (read + written) per second. REQUIRES: num_bytes >= 16, iterations >= 1.
absl::StatusOr<double> MeasureCopyBandwidth(int64_t num_bytes, int iterations);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_DEVICE_H_
