// `kvsim record`: attention traces from the closed-loop forward pass, for the open-loop quality path.
// Thin: parsing and output only; the work is in sim/eval/trace_recorder.
#include <ostream>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/eval/eval_tasks.h"
#include "sim/eval/llama_model.h"
#include "sim/eval/trace_recorder.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "tools/model_flags.h"
#include "traces/attention/attention_trace_io.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, layers, "", "comma-separated layer indices to record (ascending); empty = every layer");
ABSL_FLAG(std::string, kv_heads, "", "comma-separated KV head indices to record (ascending); empty = every head");
ABSL_FLAG(int64_t, decode_steps, 32, "greedy decode steps per prompt, in tokens");
ABSL_FLAG(std::string, dtype, "fp16", "payload dtype of the trace: fp16, bf16 or fp32");

namespace kvsim {
namespace {

absl::StatusOr<std::vector<int32_t>> IntList(const char* flag, const std::string& text) {
  std::vector<int32_t> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    int32_t v;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(item), &v)) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", item, "' is not an integer"));
    }
    out.push_back(v);
  }
  return out;
}

absl::Status RunRecord(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments (use --model and --tasks)");
  const std::string model_dir = absl::GetFlag(FLAGS_model), task_file = absl::GetFlag(FLAGS_tasks);
  const std::string path = absl::GetFlag(FLAGS_out);
  if (model_dir.empty()) return absl::InvalidArgumentError("--model=DIR (a Hugging Face model folder) is required");
  if (task_file.empty()) return absl::InvalidArgumentError("--tasks=FILE (a task JSONL) is required");
  if (path.empty()) return absl::InvalidArgumentError("--out=T.kvat (the trace to write) is required");
  TraceRecordOptions options;
  KVSIM_ASSIGN_OR_RETURN(options.layers, IntList("layers", absl::GetFlag(FLAGS_layers)));
  KVSIM_ASSIGN_OR_RETURN(options.kv_heads, IntList("kv_heads", absl::GetFlag(FLAGS_kv_heads)));
  options.decode_steps = absl::GetFlag(FLAGS_decode_steps);
  if (options.decode_steps < 0) return absl::InvalidArgumentError("--decode_steps must be >= 0");
  KVSIM_ASSIGN_OR_RETURN(options.query_window, QueryWindowFromFlag());
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (dtype == "fp16") {
    options.dtype = AttentionDType::kFloat16;
  } else if (dtype == "bf16") {
    options.dtype = AttentionDType::kBFloat16;
  } else if (dtype == "fp32") {
    options.dtype = AttentionDType::kFloat32;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--dtype=", dtype, ": expected fp16, bf16 or fp32"));
  }
  KVSIM_ASSIGN_OR_RETURN(std::vector<EvalTask> tasks, TasksFromFlags());
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<LlamaModel> model, LoadLlamaModel(model_dir));
  for (const EvalTask& task : tasks) KVSIM_RETURN_IF_ERROR(ValidateTaskIds(task, model->config.vocab_size));
  KVSIM_ASSIGN_OR_RETURN(AttentionTraceHeader header, TraceHeaderFor(*model, options));
  KVSIM_ASSIGN_OR_RETURN(auto writer, AttentionTraceWriter::Create(path, header));
  for (const EvalTask& task : tasks) {
    auto sample = RecordAttentionSample(*model, task.prompt_ids, options);
    if (!sample.ok()) return absl::InvalidArgumentError(absl::StrCat(task.source, ": ", sample.status().message()));
    if (absl::Status s = writer->Append(*sample); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(task.source, ": task '", task.id, "': ", s.message()));
    }
  }
  KVSIM_RETURN_IF_ERROR(writer->Finish());
  out << "recorded " << tasks.size() << " samples (" << header.kept_layers.size() << " layers x "
      << header.kept_kv_heads.size() << " KV heads, " << options.decode_steps << " decode steps) to " << path << "\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    record,
    {
        .name = "record",
        .summary = "record attention traces (.kvat) from the closed-loop forward pass of a model folder",
        .usage = "kvsim record --model=DIR --tasks=FILE --out=T.kvat [--layers=0,2] [--kv_heads=0] [--decode_steps=32] "
                 "[--query_window=64] [--dtype=fp16] [--max_tasks=N]",
        .details =
            "For each task's prompt: a prefill and --decode_steps greedy decode steps with the full cache, on CPU\n"
            "(the forward pass of 'kvsim eval'); stores post-rotary keys, values and queries of the chosen layers\n"
            "and KV heads and the prefill attention column sums, in the format of tools/record_attention.py, for\n"
            "'kvsim quality'. The file is written to a temporary name and renamed when complete.",
        .flags = {"model", "tasks", "out", "layers", "kv_heads", "decode_steps", "query_window", "dtype", "max_tasks"},
        .flag_aliases = {{"record_dtype", "dtype"}},
        .run = RunRecord,
    });

}  // namespace kvsim
