// kernels/device.h for builds without CUDA: no device is ever available.
#include "kernels/device.h"

namespace kvsim {
namespace {

absl::Status NoCuda() {
  return absl::UnavailableError("this kvsim was built without CUDA (no nvcc at build time, or KVSIM_NO_CUDA=1)");
}

}  // namespace

bool CudaDeviceAvailable() { return false; }

absl::StatusOr<DeviceProperties> QueryDevice(int) { return NoCuda(); }

absl::StatusOr<std::vector<uint8_t>> DeviceCopyRoundTrip(const std::vector<uint8_t>&) { return NoCuda(); }

absl::StatusOr<double> MeasureCopyBandwidth(int64_t, int) { return NoCuda(); }

}  // namespace kvsim
