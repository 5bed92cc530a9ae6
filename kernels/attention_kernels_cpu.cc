// kernels/attention_kernels.h for builds without CUDA: arguments are still checked, then Unavailable.
#include "kernels/attention_kernels.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status NoCuda() {
  return absl::UnavailableError("this kvsim was built without CUDA (no nvcc at build time, or KVSIM_NO_CUDA=1)");
}

}  // namespace

absl::Status LaunchDecodePartial(const DecodeArgs& args) {
  KVSIM_RETURN_IF_ERROR(CheckDecodeArgs(args));
  return NoCuda();
}

absl::Status LaunchMergeStates(const DecodeArgs& args) {
  KVSIM_RETURN_IF_ERROR(CheckDecodeArgs(args));
  return NoCuda();
}

absl::Status LaunchDecode(const DecodeArgs& args) { return LaunchDecodePartial(args); }

absl::Status LaunchPrefill(const PrefillArgs& args) {
  KVSIM_RETURN_IF_ERROR(CheckPrefillArgs(args));
  return NoCuda();
}

}  // namespace kvsim
