#include "sim/eval/closed_loop_eval.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "policies/token/token_policy.h"
#include "sim/eval/llama_session.h"
#include "util/parallel.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int64_t ResolveBudget(const EvalPoint& point, int64_t prompt_len) {
  return point.is_ratio ? std::max<int64_t>(1, std::llround(point.budget_value * prompt_len))
                        : static_cast<int64_t>(point.budget_value);
}

struct PointSpec {
  EvalPoint meta;
  std::string spec;
  bool full = false;
};

// One (policy, budget) continuing from `prefill` (not modified).
absl::Status RunPoint(const LlamaModel& model, const EvalTask& task, const LlamaSession& prefill,
                      const std::vector<float>& first_logits, const PointSpec& point, int64_t budget, uint64_t seed,
                      PromptCaches* caches, EvalRun* run) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<LlamaSession> session = prefill.Clone();
  KVSIM_RETURN_IF_ERROR(session->AttachPolicy(point.spec, budget, seed, caches));
  const std::vector<int32_t>& eos = model.config.eos_token_ids;
  std::vector<float> logits = first_logits;
  if (task.is_perplexity()) {
    for (size_t i = 0; i < task.answer_ids.size(); ++i) {
      run->nll_sum += NegativeLogLikelihood(logits, task.answer_ids[i]);
      if (i + 1 < task.answer_ids.size()) {
        KVSIM_ASSIGN_OR_RETURN(logits, session->Decode(task.answer_ids[i]));
      }
    }
    run->scored_tokens = task.answer_ids.size();
  } else {
    const size_t n = task.answer_ids.size();
    while (true) {
      const int32_t next = ArgMax(logits);
      run->generated.push_back(next);
      if (run->generated.size() >= n || std::find(eos.begin(), eos.end(), next) != eos.end()) break;
      KVSIM_ASSIGN_OR_RETURN(logits, session->Decode(next));
    }
    run->correct = ExactMatch(run->generated, task.answer_ids, eos);
    run->scored_tokens = run->generated.size();
  }
  run->budget_tokens = budget;
  run->mean_tokens_read = session->mean_tokens_read();
  run->decode_steps = session->decode_steps();
  run->seconds = Seconds(start);
  return absl::OkStatus();
}

// A task's prefill, shared by its runs (computed by the first worker that needs it, freed by the last).
struct TaskState {
  std::once_flag once;
  std::unique_ptr<LlamaSession> prefill;
  std::vector<float> logits;
  std::unique_ptr<PromptCaches> caches;
  absl::Status status;
  std::atomic<int64_t> remaining{0};  // runs of the task not finished
};

void Prefill(const LlamaModel& model, const EvalTask& task, int64_t query_window, TaskState* state, double* seconds) {
  const auto start = std::chrono::steady_clock::now();
  // Perplexity feeds the answer but its last token; generation makes at most len(answer) tokens.
  state->prefill = std::make_unique<LlamaSession>(model, task.prompt_ids.size() + task.answer_ids.size(), query_window);
  auto logits = state->prefill->Prefill(task.prompt_ids);
  if (!logits.ok()) {
    state->status = absl::InvalidArgumentError(absl::StrCat(task.source, ": ", logits.status().message()));
    return;
  }
  state->logits = std::move(*logits);
  state->caches = std::make_unique<PromptCaches>(model.config.num_layers, model.config.num_kv_heads);
  *seconds = Seconds(start);
}

}  // namespace

absl::StatusOr<EvalResults> RunClosedLoopEval(const LlamaModel& model, const std::vector<EvalTask>& tasks,
                                              const EvalOptions& options) {
  if (options.policies.empty()) return absl::InvalidArgumentError("no policies given");
  if (options.budget_tokens.empty() && options.budget_ratios.empty()) {
    return absl::InvalidArgumentError("no budgets given (tokens or ratios)");
  }
  if (options.query_window < 0) return absl::InvalidArgumentError("query_window must be >= 0");
  if (options.num_threads < 0 || options.num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads must be in [0, ", kMaxThreads, "] (0 = every core), got ", options.num_threads));
  }
  for (int64_t b : options.budget_tokens) {
    if (b < 1 || b > (int64_t{1} << 31) - 1) {
      return absl::InvalidArgumentError(absl::StrCat("budget ", b, " tokens: must be in [1, 2^31)"));
    }
  }
  for (double r : options.budget_ratios) {
    if (!(r > 0 && r <= 1)) return absl::InvalidArgumentError(absl::StrCat("budget ratio ", r, ": must be in (0, 1]"));
  }
  for (const EvalTask& task : tasks) KVSIM_RETURN_IF_ERROR(ValidateTaskIds(task, model.config.vocab_size));
  std::vector<int64_t> tokens = options.budget_tokens;
  std::vector<double> ratios = options.budget_ratios;
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  std::sort(ratios.begin(), ratios.end());
  ratios.erase(std::unique(ratios.begin(), ratios.end()), ratios.end());
  std::vector<PointSpec> points;
  for (size_t i = 0; i < options.policies.size(); ++i) {
    const std::string& spec = options.policies[i];
    if (std::find(options.policies.begin(), options.policies.begin() + i, spec) != options.policies.begin() + i) {
      return absl::InvalidArgumentError(absl::StrCat("policy '", spec, "' is given twice"));
    }
    KVSIM_RETURN_IF_ERROR(CheckClosedLoopPolicy(spec));
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TokenPolicy> policy, CreateTokenPolicy(spec, {options.seed}));
    KVSIM_RETURN_IF_ERROR(CheckPolicyFitsModel(*policy, spec, model));
    for (size_t b = 0; b < tokens.size() + ratios.size(); ++b) {
      PointSpec p;
      p.spec = spec;
      p.full = policy->kind() == TokenPolicy::Kind::kFull;
      p.meta.policy = policy->Name();
      p.meta.kind = TokenPolicyKindName(policy->kind());
      p.meta.is_ratio = b >= tokens.size();
      p.meta.budget_value = p.meta.is_ratio ? ratios[b - tokens.size()] : static_cast<double>(tokens[b]);
      points.push_back(p);
    }
  }
  EvalResults results;
  results.model = model.source;
  results.num_tasks = tasks.size();
  results.seed = options.seed;
  results.query_window = options.query_window;
  for (const PointSpec& p : points) results.points.push_back(p.meta);
  results.runs.resize(tasks.size() * points.size());
  results.prefill_seconds.assign(tasks.size(), 0.0);
  // Work items: (task, point) pairs, task-major, so that the workers share a few tasks' prefills at a
  // time. Of the points of kind full only the first runs (the budget does not change it); the others
  // are copied from it afterwards.
  int first_full = -1;
  for (size_t p = 0; p < points.size() && first_full < 0; ++p) first_full = points[p].full ? static_cast<int>(p) : -1;
  std::vector<int32_t> run_points;
  for (size_t p = 0; p < points.size(); ++p) {
    if (!points[p].full || static_cast<int>(p) == first_full) run_points.push_back(static_cast<int32_t>(p));
  }
  std::vector<TaskState> states(tasks.size());
  for (TaskState& state : states) state.remaining = run_points.size();
  std::vector<absl::Status> status(tasks.size() * run_points.size());
  std::mutex progress_mutex;
  int64_t done = 0;
  ParallelFor(ResolveThreadCount(options.num_threads), status.size(), [&](size_t item, int) {
    const size_t t = item / run_points.size();
    const int32_t p = run_points[item % run_points.size()];
    TaskState& state = states[t];
    std::call_once(state.once,
                   [&] { Prefill(model, tasks[t], options.query_window, &state, &results.prefill_seconds[t]); });
    EvalRun& run = results.runs[t * points.size() + p];
    run.task = t;
    run.point = p;
    if (state.status.ok()) {
      const int64_t budget = ResolveBudget(points[p].meta, tasks[t].prompt_ids.size());
      absl::Status s = RunPoint(model, tasks[t], *state.prefill, state.logits, points[p], budget, options.seed,
                                state.caches.get(), &run);
      if (!s.ok()) {
        status[item] = absl::Status(s.code(), absl::StrCat(tasks[t].source, ": task '", tasks[t].id, "', policy ",
                                                           points[p].spec, " at budget ", budget, ": ", s.message()));
      }
    } else {
      status[item] = state.status;
    }
    if (--state.remaining == 0) {
      state.prefill.reset();
      state.caches.reset();
      if (options.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.progress(++done, tasks.size());
      }
    }
  });
  for (size_t t = 0; t < tasks.size() && first_full >= 0; ++t) {
    for (size_t p = 0; p < points.size(); ++p) {
      if (!points[p].full || static_cast<int>(p) == first_full) continue;
      EvalRun& run = results.runs[t * points.size() + p];
      run = results.runs[t * points.size() + first_full];
      run.point = static_cast<int32_t>(p);
      run.budget_tokens = ResolveBudget(points[p].meta, tasks[t].prompt_ids.size());
    }
  }
  for (const absl::Status& s : status) KVSIM_RETURN_IF_ERROR(s);
  // Aggregates, in a fixed order.
  std::map<std::pair<std::string, int64_t>, int> families;  // (family, context) -> order
  for (const EvalTask& task : tasks) families.emplace(std::make_pair(task.task, task.context_tokens), 0);
  for (size_t p = 0; p < points.size(); ++p) {
    auto aggregate = [&](const std::string& family, int64_t context, bool all) {
      EvalGroup g;
      g.point = static_cast<int32_t>(p);
      g.task = all ? "all" : family;
      g.context_tokens = all ? 0 : context;
      double read_sum = 0, budget_sum = 0, nll = 0;
      int64_t read_steps = 0;
      for (size_t t = 0; t < tasks.size(); ++t) {
        const EvalTask& task = tasks[t];
        if (all ? task.is_perplexity() : (task.task != family || task.context_tokens != context)) continue;
        const EvalRun& run = results.runs[t * points.size() + p];
        ++g.num_tasks;
        g.num_correct += run.correct ? 1 : 0;
        nll += run.nll_sum;
        g.nll_tokens += task.is_perplexity() ? run.scored_tokens : 0;
        read_sum += run.mean_tokens_read * run.decode_steps;
        read_steps += run.decode_steps;
        budget_sum += run.budget_tokens;
        if (task.answer_position >= 0) {
          ++g.needle_tasks;
          const int64_t distance = static_cast<int64_t>(task.prompt_ids.size()) - task.answer_position;
          g.needle_covered += distance <= run.budget_tokens ? 1 : 0;
        }
      }
      if (g.num_tasks == 0) return;
      g.accuracy = static_cast<double>(g.num_correct) / g.num_tasks;
      if (g.nll_tokens > 0) {
        g.mean_nll = nll / g.nll_tokens;
        g.perplexity = std::exp(g.mean_nll);
      }
      g.mean_tokens_read = read_steps > 0 ? read_sum / read_steps : 0;
      g.mean_budget_tokens = budget_sum / g.num_tasks;
      results.groups.push_back(g);
    };
    for (const auto& [key, unused] : families) aggregate(key.first, key.second, false);
    aggregate("", 0, true);
  }
  return results;
}

}  // namespace kvsim
