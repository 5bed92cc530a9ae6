// File: sim/eval/eval_tasks.h
//
// Closed-loop evaluation tasks: the task JSONL of issue 19 (one instance per line, token ids only):
//   {"id": "niah_single-1024-0007", "task": "niah_single", "context_tokens": 1024,
//    "prompt_ids": [256, ...], "answer_ids": [51, 55], "max_new_tokens": 8, "answer_position": 311}
// `task` is a family name (niah_single, niah_multikey, niah_multivalue, variable_tracking, common_words,
// dialogue_recall, or any other name); "perplexity" tasks are scored by the teacher-forced mean negative
// log-likelihood of answer_ids after prompt_ids, every other family by exact match: the greedy generation,
// cut at EOS or after max_new_tokens, must begin with answer_ids. answer_position is optional (-1 when
// absent). Blank lines are skipped; unknown keys are ignored.
//
// ReadEvalTasks refuses a malformed line naming the file, line and key: not a JSON object, a missing or
// mistyped key, an empty prompt or answer, a negative id, max_new_tokens < 1 or shorter than the answer
// (for exact-match families), a duplicate id. ValidateTaskIds checks the ids against a vocabulary.
// Plain structs and pure functions; thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::vector<EvalTask> tasks, ReadEvalTasks("tasks.jsonl"));
//   bool ok = ExactMatch(generated_ids, tasks[0].answer_ids, /*eos_ids=*/{257});
#ifndef KVSIM_SIM_EVAL_EVAL_TASKS_H_
#define KVSIM_SIM_EVAL_EVAL_TASKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kvsim {

inline constexpr char kPerplexityTask[] = "perplexity";

struct EvalTask {
  std::string id;
  std::string task;  // family
  int64_t context_tokens = 0;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> answer_ids;
  int64_t max_new_tokens = 0;    // 0 allowed for perplexity tasks
  int64_t answer_position = -1;  // -1: not given
  std::string source;            // "FILE:LINE", for messages

  bool is_perplexity() const { return task == kPerplexityTask; }
};

// Parses JSONL text; `path` names it in errors.
absl::StatusOr<std::vector<EvalTask>> ParseEvalTasks(const std::string& text, const std::string& path);
absl::StatusOr<std::vector<EvalTask>> ReadEvalTasks(const std::string& path);

// InvalidArgument naming the task's source and the first id >= vocab_size.
absl::Status ValidateTaskIds(const EvalTask& task, int64_t vocab_size);

// The generation, cut at the first id in `eos_ids` (excluded), begins with `answer`.
bool ExactMatch(absl::Span<const int32_t> generated, absl::Span<const int32_t> answer,
                absl::Span<const int32_t> eos_ids);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_EVAL_TASKS_H_
