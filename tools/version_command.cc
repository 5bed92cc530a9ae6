// `kvsim version`: the version and what this binary was built with.
#include <ostream>

#include "absl/base/config.h"
#include "google/protobuf/stubs/common.h"
#include "tools/command.h"
#include "util/version.h"

namespace kvsim {
namespace {

absl::Status RunVersion(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no arguments");
  out << "kvsim " << kKvsimVersion << "\n";
#ifdef KVSIM_BUILT_WITH_CUDA
  out << "cuda: enabled (nvcc found at build time; kernels for sm_90a plus PTX)\n";
#else
  out << "cuda: disabled (no nvcc at build time, or KVSIM_NO_CUDA=1)\n";
#endif
  out << "abseil: " << ABSL_LTS_RELEASE_VERSION << "\n";
  out << "protobuf: " << google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION) << "\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(version, {
                                    .name = "version",
                                    .summary = "print the version and build facts",
                                    .usage = "kvsim version",
                                    .details = "",
                                    .flags = {},
                                    .run = RunVersion,
                                });

}  // namespace kvsim
