#include "sim/eval/eval_tasks.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "simdjson.h"
#include "util/file.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status IdArray(simdjson::dom::object o, const char* key, std::vector<int32_t>* out) {
  simdjson::dom::array array;
  if (o[key].get_array().get(array) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\": missing or not an array of token ids"));
  }
  size_t i = 0;
  for (simdjson::dom::element e : array) {
    int64_t v;
    if (e.get_int64().get(v) != simdjson::SUCCESS || v < 0 || v > (int64_t{1} << 31) - 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", key, "\"[", i, "]: expected a token id in [0, 2^31), got ", simdjson::minify(e)));
    }
    out->push_back(static_cast<int32_t>(v));
    ++i;
  }
  if (out->empty()) return absl::InvalidArgumentError(absl::StrCat("\"", key, "\": empty"));
  return absl::OkStatus();
}

absl::Status Int(simdjson::dom::object o, const char* key, bool required, int64_t* out) {
  simdjson::dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) {
    return required ? absl::InvalidArgumentError(absl::StrCat("\"", key, "\": missing")) : absl::OkStatus();
  }
  if (e.get_int64().get(*out) != simdjson::SUCCESS || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key, "\": expected a non-negative integer, got ", simdjson::minify(e)));
  }
  return absl::OkStatus();
}

absl::Status String(simdjson::dom::object o, const char* key, std::string* out) {
  std::string_view s;
  if (o[key].get_string().get(s) != simdjson::SUCCESS || s.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\": missing or not a non-empty string"));
  }
  *out = std::string(s);
  return absl::OkStatus();
}

absl::Status ParseTask(simdjson::dom::parser& parser, absl::string_view line, EvalTask* task) {
  simdjson::dom::element root;
  if (auto error = parser.parse(line.data(), line.size()).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) return absl::InvalidArgumentError("expected a JSON object");
  KVSIM_RETURN_IF_ERROR(String(o, "id", &task->id));
  KVSIM_RETURN_IF_ERROR(String(o, "task", &task->task));
  KVSIM_RETURN_IF_ERROR(Int(o, "context_tokens", true, &task->context_tokens));
  KVSIM_RETURN_IF_ERROR(IdArray(o, "prompt_ids", &task->prompt_ids));
  KVSIM_RETURN_IF_ERROR(IdArray(o, "answer_ids", &task->answer_ids));
  KVSIM_RETURN_IF_ERROR(Int(o, "max_new_tokens", !task->is_perplexity(), &task->max_new_tokens));
  int64_t position = -1;
  KVSIM_RETURN_IF_ERROR(Int(o, "answer_position", false, &position));
  task->answer_position = position;
  if (!task->is_perplexity()) {
    if (task->max_new_tokens < static_cast<int64_t>(task->answer_ids.size())) {
      return absl::InvalidArgumentError(absl::StrCat("\"max_new_tokens\": ", task->max_new_tokens,
                                                     " is shorter than the ", task->answer_ids.size(),
                                                     " answer tokens (the task could never be solved)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<EvalTask>> ParseEvalTasks(const std::string& text, const std::string& path) {
  std::vector<EvalTask> tasks;
  std::set<std::string> ids;
  simdjson::dom::parser parser;
  int64_t number = 0;
  absl::string_view rest = text;
  ConsumeUtf8ByteOrderMark(&rest);
  for (absl::string_view line : absl::StrSplit(rest, '\n')) {
    ++number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    EvalTask task;
    task.source = absl::StrCat(path, ":", number);
    if (absl::Status s = ParseTask(parser, line, &task); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(task.source, ": ", s.message()));
    }
    if (!ids.insert(task.id).second) {
      return absl::InvalidArgumentError(absl::StrCat(task.source, ": task id '", task.id, "' appears twice"));
    }
    tasks.push_back(std::move(task));
  }
  if (tasks.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tasks"));
  return tasks;
}

absl::StatusOr<std::vector<EvalTask>> ReadEvalTasks(const std::string& path) {
  KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseEvalTasks(text, path);
}

absl::Status ValidateTaskIds(const EvalTask& task, int64_t vocab_size) {
  for (const auto* ids : {&task.prompt_ids, &task.answer_ids}) {
    for (size_t i = 0; i < ids->size(); ++i) {
      if ((*ids)[i] >= vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrCat(task.source, ": task '", task.id, "': ", ids == &task.prompt_ids ? "prompt_ids" : "answer_ids",
                         "[", i, "] = ", (*ids)[i], " is outside the model's vocabulary [0, ", vocab_size, ")"));
      }
    }
  }
  return absl::OkStatus();
}

bool ExactMatch(absl::Span<const int32_t> generated, absl::Span<const int32_t> answer,
                absl::Span<const int32_t> eos_ids) {
  size_t end = 0;
  while (end < generated.size() && std::find(eos_ids.begin(), eos_ids.end(), generated[end]) == eos_ids.end()) ++end;
  return end >= answer.size() && std::equal(answer.begin(), answer.end(), generated.begin());
}

}  // namespace kvsim
