// `kvsim synth_attention`: writes a synthetic attention trace with planted head types (sinks, local
// windows, heavy hitters, a needle) for trying `kvsim quality` without a model. Results on it are
// labelled synthetic.
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/attention/attention_trace_io.h"
#include "traces/attention/synthetic_trace.h"
#include "util/status_macros.h"

ABSL_FLAG(int64_t, synth_prompt_len, 4096, "prompt length of each synthetic sample, in tokens");
ABSL_FLAG(int64_t, synth_decode_steps, 64, "decode steps of each synthetic sample");
ABSL_FLAG(int32_t, synth_samples, 1, "number of synthetic samples");
ABSL_FLAG(int32_t, synth_layers, 2, "layers (all kept)");
ABSL_FLAG(int32_t, synth_kv_heads, 4, "KV heads per layer (all kept)");
ABSL_FLAG(int32_t, synth_group_size, 2, "query heads per KV head");
ABSL_FLAG(int32_t, synth_head_dim, 64, "head dimension, >= 40");
ABSL_FLAG(std::string, synth_head_types, "sink,local,heavy,needle",
          "head types, assigned to KV heads in turn: sink, local, heavy, needle, mixed");
ABSL_FLAG(bool, synth_column_sums, false, "store prefill column sums (O(prompt^2): short prompts only)");
ABSL_FLAG(int32_t, synth_zstd_level, 0, "zstd level for tensor records, 0 = uncompressed");

namespace kvsim {
namespace {

constexpr int64_t kMaxSyntheticTokens = 1 << 24;  // per sample
constexpr double kMaxSyntheticBytes = 16.0 * (1 << 30);
constexpr int64_t kMaxColumnSumsPrompt = 16384;

absl::Status RunSynth(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --out=FILE)");
  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) return absl::InvalidArgumentError("--out=FILE (the trace to write) is required");
  SyntheticTraceOptions o;
  o.seed = absl::GetFlag(FLAGS_seed);
  o.prompt_len = absl::GetFlag(FLAGS_synth_prompt_len);
  o.decode_steps = absl::GetFlag(FLAGS_synth_decode_steps);
  o.num_samples = absl::GetFlag(FLAGS_synth_samples);
  o.num_layers = absl::GetFlag(FLAGS_synth_layers);
  o.num_kv_heads = absl::GetFlag(FLAGS_synth_kv_heads);
  o.group_size = absl::GetFlag(FLAGS_synth_group_size);
  o.head_dim = absl::GetFlag(FLAGS_synth_head_dim);
  o.column_sums = absl::GetFlag(FLAGS_synth_column_sums);
  if (o.prompt_len < 1 || o.decode_steps < 0 || o.num_samples < 1 || o.num_layers < 1 || o.num_kv_heads < 1 ||
      o.group_size < 1 || o.head_dim < 40) {
    return absl::InvalidArgumentError(
        "--synth_prompt_len, --synth_samples, --synth_layers, --synth_kv_heads, --synth_group_size must be "
        ">= 1, --synth_decode_steps >= 0 and --synth_head_dim >= 40");
  }
  // The whole trace is generated in memory before it is written: refuse sizes that cannot be, up front.
  if (o.prompt_len + o.decode_steps > kMaxSyntheticTokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("--synth_prompt_len + --synth_decode_steps = ", static_cast<double>(o.prompt_len) + o.decode_steps,
                     " tokens: at most ", kMaxSyntheticTokens, " per sample"));
  }
  const double bytes = 4.0 * o.num_samples * o.num_layers * o.num_kv_heads * (2.0 + o.group_size) *
                       static_cast<double>(o.prompt_len + o.decode_steps) * o.head_dim;
  if (bytes > kMaxSyntheticBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the trace would take %.1f GiB of memory to generate (samples x layers x KV heads x (2 + group size) x "
        "tokens x head_dim floats); at most %.0f GiB: use fewer samples, layers, heads or tokens",
        bytes / (1 << 30), kMaxSyntheticBytes / (1 << 30)));
  }
  if (o.column_sums && o.prompt_len > kMaxColumnSumsPrompt) {
    return absl::InvalidArgumentError(absl::StrCat("--synth_column_sums: --synth_prompt_len at most ",
                                                   kMaxColumnSumsPrompt, " (the sums cost O(prompt^2))"));
  }
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_synth_head_types), ',', absl::SkipEmpty())) {
    KVSIM_ASSIGN_OR_RETURN(SyntheticHeadType type, ParseSyntheticHeadType(name));
    o.head_types.push_back(type);
  }
  const SyntheticTrace trace = GenerateSyntheticTrace(o);
  KVSIM_ASSIGN_OR_RETURN(auto writer,
                         AttentionTraceWriter::Create(path, trace.header, {absl::GetFlag(FLAGS_synth_zstd_level)}));
  for (const AttentionSample& sample : trace.samples) KVSIM_RETURN_IF_ERROR(writer->Append(sample));
  KVSIM_RETURN_IF_ERROR(writer->Finish());
  out << absl::StrCat("wrote synthetic attention trace ", path, ": ", o.num_samples, " samples of ", o.prompt_len,
                      " + ", o.decode_steps, " tokens, ", o.num_layers, " layers x ", o.num_kv_heads, " KV heads x ",
                      o.group_size, " query heads, head_dim ", o.head_dim, "\n");
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    synth_attention,
    {
        .name = "synth_attention",
        .summary = "write a synthetic attention trace (planted sinks, windows, heavy hitters, needle)",
        .usage = "kvsim synth_attention --out=FILE.kvat [--synth_prompt_len=N] [--seed=S] ...",
        .details = "Generates queries, keys and values whose attention follows known patterns per KV head, in the\n"
                   "attention-trace format 'kvsim quality' reads. Results on it are synthetic.",
        .flags = {"out", "seed", "synth_prompt_len", "synth_decode_steps", "synth_samples", "synth_layers",
                  "synth_kv_heads", "synth_group_size", "synth_head_dim", "synth_head_types", "synth_column_sums",
                  "synth_zstd_level"},
        .run = RunSynth,
    });

}  // namespace kvsim
