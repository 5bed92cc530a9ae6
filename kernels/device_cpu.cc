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

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), size_bytes_(other.size_bytes_) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept { return *this; }
DeviceBuffer::~DeviceBuffer() = default;
absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(int64_t) { return NoCuda(); }
absl::StatusOr<DeviceBuffer> DeviceBuffer::FromHost(const void*, int64_t) { return NoCuda(); }
absl::Status DeviceBuffer::CopyFromHost(const void*, int64_t) { return NoCuda(); }
absl::Status DeviceBuffer::CopyToHost(void*, int64_t) const { return NoCuda(); }
absl::Status DeviceBuffer::Fill(uint8_t) { return NoCuda(); }
absl::Status DeviceSynchronize() { return NoCuda(); }
DeviceTimer::~DeviceTimer() = default;
absl::Status DeviceTimer::Start() { return NoCuda(); }
absl::StatusOr<double> DeviceTimer::StopMs() { return NoCuda(); }
absl::Status DeviceMemset(void*, uint8_t, int64_t) { return NoCuda(); }
absl::Status DeviceFillRandom(void*, int64_t, FillKind, uint64_t, uint8_t, float, float) { return NoCuda(); }
PinnedHostBuffer::~PinnedHostBuffer() = default;
absl::Status PinnedHostBuffer::Allocate(int64_t) { return NoCuda(); }
absl::Status CopyAsync(void*, const void*, int64_t, bool) { return NoCuda(); }

}  // namespace kvsim
