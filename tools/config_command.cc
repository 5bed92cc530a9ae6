// `kvsim config`: the effective configuration (presets resolved, defaults filled) and the figures
// derived from it. Checks a config file without running anything.
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/experiment_config.h"
#include "config/kv_format.h"
#include "config/model_spec.h"
#include "sim/serving/replay.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

absl::Status RunConfig(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments");
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadExperimentConfig(absl::GetFlag(FLAGS_config)));
  int block_tokens = absl::GetFlag(FLAGS_block_tokens);
  if (block_tokens == 0) block_tokens = config.cache().block_tokens();
  if (block_tokens < 0) return absl::InvalidArgumentError("--block_tokens must be >= 0");
  KVSIM_ASSIGN_OR_RETURN(int64_t blocks, GpuCapacityBlocks(config, block_tokens));
  // The checks a replay or sweep runs (one function), so that a config this command accepts is one they
  // accept.
  const std::string path = absl::GetFlag(FLAGS_config);
  KVSIM_RETURN_IF_ERROR(CheckServingConfig(config, path.empty() ? "default config" : path));
  out << ToTextProto(config);
  out << "\n# derived (per GPU of one replica)\n";
  KVSIM_ASSIGN_OR_RETURN(KvFormat kv, ResolveKvFormat(config.model(), config.cost_model()));
  out << absl::StrFormat("# kv_format: %s\n", kv.Name());
  out << absl::StrFormat("# kv_bytes_per_token: %.10g\n", KvBytesPerToken(config.model(), kv));
  out << absl::StrFormat("# weight_bytes_per_gpu: %d\n", WeightBytesPerGpu(config.model()));
  out << absl::StrFormat("# gpu_capacity_blocks: %d (of %d tokens)\n", blocks, block_tokens);
  out << absl::StrFormat("# gpu_capacity_tokens: %d\n", blocks * block_tokens);
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    config, {
                .name = "config",
                .summary = "check a config file and print it resolved, with derived capacities",
                .usage = "kvsim config [--config=FILE] [--block_tokens=N]",
                .details = "Loads the experiment config, resolves the model and device presets, fills every default\n"
                           "and validates it; prints the result as a text proto (which reloads unchanged) followed by\n"
                           "the KV bytes per token, the weight bytes and the GPU KV capacity it implies.",
                .flags = {"config", "block_tokens"},
                .run = RunConfig,
            });

}  // namespace kvsim
