// File: tools/model_flags.h
//
// The flags of the commands that run a model on tasks (`kvsim eval`, `kvsim record`, `kvsim select
// --model`): --model, --tasks, --max_tasks and --query_window, defined once, and their checked values.
#ifndef KVSIM_TOOLS_MODEL_FLAGS_H_
#define KVSIM_TOOLS_MODEL_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "sim/eval/eval_tasks.h"

ABSL_DECLARE_FLAG(std::string, model);         // Hugging Face model folder
ABSL_DECLARE_FLAG(std::string, tasks);         // task JSONL
ABSL_DECLARE_FLAG(int64_t, max_tasks);         // the first N tasks; 0 = all
ABSL_DECLARE_FLAG(int64_t, query_window);      // prompt queries kept (eval) or stored (record)

namespace kvsim {

// The tasks of --tasks (ReadEvalTasks), only the first --max_tasks of them when that is > 0.
// InvalidArgument for --max_tasks < 0 (before reading), and ReadEvalTasks' errors.
absl::StatusOr<std::vector<EvalTask>> TasksFromFlags();

// --query_window; InvalidArgument when it is < 0.
absl::StatusOr<int64_t> QueryWindowFromFlag();

}  // namespace kvsim

#endif  // KVSIM_TOOLS_MODEL_FLAGS_H_
