#include "tools/model_flags.h"

#include "absl/flags/flag.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, model, "", "Hugging Face model folder: config.json and *.safetensors (Llama architecture)");
ABSL_FLAG(std::string, tasks, "", "task file (JSONL of prompt and answer token ids)");
ABSL_FLAG(int64_t, max_tasks, 0, "evaluate at most the first N tasks of the file; 0 = all");
ABSL_FLAG(int64_t, query_window, 64,
          "prompt queries kept for the policies (eval) or stored in the trace (record): the last N prompt "
          "positions; 0 = every one");

namespace kvsim {

absl::StatusOr<std::vector<EvalTask>> TasksFromFlags() {
  const int64_t max_tasks = absl::GetFlag(FLAGS_max_tasks);
  if (max_tasks < 0) return absl::InvalidArgumentError("--max_tasks must be >= 0");
  KVSIM_ASSIGN_OR_RETURN(std::vector<EvalTask> tasks, ReadEvalTasks(absl::GetFlag(FLAGS_tasks)));
  if (max_tasks > 0 && static_cast<int64_t>(tasks.size()) > max_tasks) tasks.resize(max_tasks);
  return tasks;
}

absl::StatusOr<int64_t> QueryWindowFromFlag() {
  const int64_t query_window = absl::GetFlag(FLAGS_query_window);
  if (query_window < 0) return absl::InvalidArgumentError("--query_window must be >= 0");
  return query_window;
}

}  // namespace kvsim
