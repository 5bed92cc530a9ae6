#include "traces/generators/workload_generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "traces/generators/arrival_process.h"
#include "traces/generators/block_chain.h"
#include "traces/generators/portable_random.h"
#include "traces/generators/sampler.h"
#include "util/check.h"
#include "util/mix64.h"
#include "util/status_macros.h"
#include "util/units.h"

// Data and invariants of Impl (true between Next calls):
// - heap is a min-heap under Later, (arrival_ns, sequence): it holds one entry per open session and at
//   most one session-start entry (session == nullptr), the arrival process's next start, pulled only
//   when the previous start is popped. A session in the heap has `next` prepared (all but request_id
//   and parent_id) and its chain holds the whole context up to and including that prompt.
// - open_sessions == sessions started - sessions recycled; recycled sessions wait in free_sessions.
// - Later turns' arrivals saturate at kMaxArrivalNs (AddSeconds) and a turn that would reach it ends its
//   session, so an arrival plus a gap cannot overflow.
// Order: the content engine `rng` is drawn in the order entries leave the heap, and within a session in
// a fixed order (class, system prompt, turns, first input in StartSession; output tokens, then the
// agent's tool, its duration and result tokens in FillNext; think time, then the next input in
// Advance). The same seed gives the same requests only while that order holds: a new draw changes
// every later request. Next tests the limits (count, and duration against the heap's earliest arrival)
// before popping, so nothing at or after duration_s is emitted. A popped start pushes its first request
// at the same time with a later sequence number, then schedules the next start.
// Why it is fast:
// - A request costs O(log open sessions) heap work and the hashes of its new blocks only: BlockChain
//   keeps the ids of full blocks, so a turn rehashes at most its partial last block, and copies the ids.
// - The prepared request is swapped into the caller's, not copied; the session keeps the caller's old
//   vectors for its next request, and ended sessions are reused (chains and vectors keep capacity), so
//   block-id vectors are reused, not reallocated, from request to request.

namespace kvsim {
namespace {

// Engine streams (SeedFor); the arrival process uses stream 1.
constexpr uint64_t kContentStream = 2;
constexpr uint64_t kSegmentSaltStream = 3;
constexpr uint64_t kPromptLengthStream = 1000;  // + class index

// Turns per session are capped so that Request::turn (int32) cannot overflow.
constexpr int64_t kMaxTurns = std::numeric_limits<int32_t>::max();

// Arrivals are kept below 2^62 ns, so sums of an arrival and a gap cannot overflow.
constexpr int64_t kMaxArrivalNs = int64_t{1} << 62;
// Requests of one generated trace: a billion is hours of writing and hundreds of GB.
constexpr int64_t kMaxGeneratedRequests = 100000000;

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::Status CheckFiniteNonNegative(double value, const std::string& field) {
  if (!std::isfinite(value) || value < 0) {
    return Invalid(field, absl::StrFormat("must be a finite number >= 0, got %g", value));
  }
  return absl::OkStatus();
}

struct ToolModel {
  std::string name;
  Sampler duration_s;
  Sampler result_tokens;
};

enum class SessionKind { kSingleTurn, kChat, kAgent };

// A validated proto::WorkloadClass.
struct ClassModel {
  SessionKind kind = SessionKind::kSingleTurn;
  // System prompts: lengths, popularity, and the probability that a session has one.
  std::vector<int64_t> prompt_tokens;
  std::optional<DiscreteTable> prompt_popularity;
  double prompt_probability = 1;
  uint64_t prompt_salt = 0;  // system prompt k's segment id is Mix64(prompt_salt ^ k)
  // single_turn and chat: input = new user tokens per turn; agent: the task.
  std::optional<Sampler> count;  // chat turns, agent calls (unset for single_turn)
  std::optional<Sampler> input;
  std::optional<Sampler> output;
  std::optional<Sampler> think_s;  // chat
  std::vector<ToolModel> tools;    // agent
  std::optional<DiscreteTable> tool_choice;
  std::vector<int> program;        // agent: tool indices, cycled; empty = draw by weight
  int64_t max_context_tokens = 0;  // 0 = none
};

absl::StatusOr<ClassModel> BuildSystemPrompts(const proto::SystemPrompts& spec, const std::string& field, uint64_t seed,
                                              int class_index, const TraceOpener& open_trace, ClassModel model) {
  if (spec.prompt_tokens_size() > 0 && (spec.num_prompts() != 0 || spec.has_prompt_tokens_distribution())) {
    return Invalid(field + ".num_prompts",
                   "give either prompt_tokens or num_prompts with prompt_tokens_distribution, not both");
  }
  for (int k = 0; k < spec.prompt_tokens_size(); ++k) {
    const int64_t tokens = spec.prompt_tokens(k);
    if (tokens < 0 || tokens > kMaxSampleTokens) {
      return Invalid(absl::StrCat(field, ".prompt_tokens[", k, "]"),
                     absl::StrCat("must be in [0, ", kMaxSampleTokens, "], got ", tokens));
    }
    model.prompt_tokens.push_back(tokens);
  }
  if (spec.num_prompts() < 0 || spec.num_prompts() > kMaxZipfValues) {
    return Invalid(field + ".num_prompts",
                   absl::StrCat("must be in [0, ", kMaxZipfValues, "], got ", spec.num_prompts()));
  }
  if (spec.num_prompts() == 0 && spec.has_prompt_tokens_distribution()) {
    return Invalid(field + ".num_prompts", "must be > 0 when prompt_tokens_distribution is set");
  }
  if (spec.num_prompts() > 0) {
    KVSIM_ASSIGN_OR_RETURN(Sampler lengths,
                           Sampler::Create(spec.prompt_tokens_distribution(), field + ".prompt_tokens_distribution",
                                           SampleUnit::kTokens, open_trace));
    Rng rng(SeedFor(seed, kPromptLengthStream + class_index));
    for (int k = 0; k < spec.num_prompts(); ++k) model.prompt_tokens.push_back(lengths.SampleTokens(rng));
  }
  KVSIM_RETURN_IF_ERROR(CheckFiniteNonNegative(spec.zipf_exponent(), field + ".zipf_exponent"));
  if (spec.has_probability()) {
    if (!(spec.probability() >= 0 && spec.probability() <= 1)) {
      return Invalid(field + ".probability", absl::StrFormat("must be in [0, 1], got %g", spec.probability()));
    }
    model.prompt_probability = spec.probability();
  }
  if (!model.prompt_tokens.empty()) {
    model.prompt_popularity = DiscreteTable::Zipf(model.prompt_tokens.size(), spec.zipf_exponent());
  }
  model.prompt_salt = SeedFor(seed, kPromptLengthStream + 500 + class_index);
  return model;
}

absl::Status BuildAgent(const proto::Agent& spec, const std::string& field, const TraceOpener& open_trace,
                        ClassModel* model) {
  KVSIM_ASSIGN_OR_RETURN(model->count,
                         Sampler::Create(spec.calls(), field + ".calls", SampleUnit::kTokens, open_trace));
  KVSIM_ASSIGN_OR_RETURN(model->input,
                         Sampler::Create(spec.task_tokens(), field + ".task_tokens", SampleUnit::kTokens, open_trace));
  KVSIM_ASSIGN_OR_RETURN(
      model->output, Sampler::Create(spec.output_tokens(), field + ".output_tokens", SampleUnit::kTokens, open_trace));
  if (spec.tools().empty()) return Invalid(field + ".tools", "needs at least one tool");
  absl::flat_hash_map<std::string, int> index;
  std::vector<double> weights;
  for (int i = 0; i < spec.tools_size(); ++i) {
    const proto::Tool& tool = spec.tools(i);
    const std::string at = absl::StrCat(field, ".tools[", i, "]");
    if (tool.name().empty()) return Invalid(at + ".name", "must not be empty");
    if (!index.emplace(tool.name(), i).second) {
      return Invalid(at + ".name", absl::StrCat("\"", tool.name(), "\" is used by another tool"));
    }
    KVSIM_RETURN_IF_ERROR(CheckFiniteNonNegative(tool.weight(), at + ".weight"));
    weights.push_back(tool.weight() == 0 ? 1 : tool.weight());
    KVSIM_ASSIGN_OR_RETURN(Sampler duration,
                           Sampler::CreateOptional(tool.has_duration_s(), tool.duration_s(), at + ".duration_s",
                                                   SampleUnit::kSeconds, open_trace));
    KVSIM_ASSIGN_OR_RETURN(
        Sampler result, Sampler::CreateOptional(tool.has_result_tokens(), tool.result_tokens(), at + ".result_tokens",
                                                SampleUnit::kTokens, open_trace));
    model->tools.push_back({tool.name(), std::move(duration), std::move(result)});
  }
  model->tool_choice = DiscreteTable(weights);
  for (int i = 0; i < spec.program_size(); ++i) {
    const auto it = index.find(spec.program(i));
    if (it == index.end()) {
      return Invalid(absl::StrCat(field, ".program[", i, "]"),
                     absl::StrCat("\"", spec.program(i), "\" is not the name of a tool in ", field, ".tools"));
    }
    model->program.push_back(it->second);
  }
  if (spec.max_context_tokens() < 0) {
    return Invalid(field + ".max_context_tokens", absl::StrCat("must be >= 0, got ", spec.max_context_tokens()));
  }
  model->max_context_tokens = spec.max_context_tokens();
  return absl::OkStatus();
}

absl::StatusOr<ClassModel> BuildClass(const proto::WorkloadClass& spec, int class_index, uint64_t seed,
                                      const TraceOpener& open_trace) {
  const std::string field = absl::StrCat("classes[", class_index, "]");
  ClassModel model;
  KVSIM_ASSIGN_OR_RETURN(model, BuildSystemPrompts(spec.system_prompts(), field + ".system_prompts", seed, class_index,
                                                   open_trace, std::move(model)));
  switch (spec.kind_case()) {
    case proto::WorkloadClass::kSingleTurn: {
      model.kind = SessionKind::kSingleTurn;
      const std::string at = field + ".single_turn";
      KVSIM_ASSIGN_OR_RETURN(model.input, Sampler::Create(spec.single_turn().input_tokens(), at + ".input_tokens",
                                                          SampleUnit::kTokens, open_trace));
      KVSIM_ASSIGN_OR_RETURN(model.output, Sampler::Create(spec.single_turn().output_tokens(), at + ".output_tokens",
                                                           SampleUnit::kTokens, open_trace));
      break;
    }
    case proto::WorkloadClass::kChat: {
      model.kind = SessionKind::kChat;
      const proto::Chat& chat = spec.chat();
      const std::string at = field + ".chat";
      KVSIM_ASSIGN_OR_RETURN(model.count,
                             Sampler::Create(chat.turns(), at + ".turns", SampleUnit::kTokens, open_trace));
      KVSIM_ASSIGN_OR_RETURN(
          model.input, Sampler::Create(chat.input_tokens(), at + ".input_tokens", SampleUnit::kTokens, open_trace));
      KVSIM_ASSIGN_OR_RETURN(
          model.output, Sampler::Create(chat.output_tokens(), at + ".output_tokens", SampleUnit::kTokens, open_trace));
      KVSIM_ASSIGN_OR_RETURN(model.think_s,
                             Sampler::CreateOptional(chat.has_think_time_s(), chat.think_time_s(), at + ".think_time_s",
                                                     SampleUnit::kSeconds, open_trace));
      if (chat.max_context_tokens() < 0) {
        return Invalid(at + ".max_context_tokens", absl::StrCat("must be >= 0, got ", chat.max_context_tokens()));
      }
      model.max_context_tokens = chat.max_context_tokens();
      break;
    }
    case proto::WorkloadClass::kAgent:
      model.kind = SessionKind::kAgent;
      KVSIM_RETURN_IF_ERROR(BuildAgent(spec.agent(), field + ".agent", open_trace, &model));
      break;
    case proto::WorkloadClass::KIND_NOT_SET:
      return Invalid(field, "no session kind set (expected single_turn, chat or agent)");
  }
  return model;
}

// t + seconds in nanoseconds, saturating at kMaxArrivalNs.
int64_t AddSeconds(int64_t t_ns, double seconds) {
  const double sum = static_cast<double>(t_ns) + seconds * 1e9;
  if (sum >= static_cast<double>(kMaxArrivalNs)) return kMaxArrivalNs;
  return t_ns + SecondsToNs(seconds);
}

}  // namespace

struct WorkloadGenerator::Impl {
  // One open chat or agent session (or a single-turn request waiting for its turn).
  struct Session {
    explicit Session(int32_t block_tokens) : chain(block_tokens) {}
    const ClassModel* model = nullptr;
    int64_t session_id = -1;
    int64_t num_turns = 1;
    int64_t last_request_id = -1;
    int64_t pending_result_tokens = 0;  // agent: tokens of the tool result that follows `next`
    BlockChain chain;
    Request next;  // the session's next request, all but request_id and parent_id filled
  };
  // A heap entry: a session's next request, or (session == nullptr) the next session start.
  struct Entry {
    int64_t arrival_ns;
    uint64_t sequence;
    std::unique_ptr<Session> session;
  };
  static bool Later(const Entry& a, const Entry& b) {
    return a.arrival_ns != b.arrival_ns ? a.arrival_ns > b.arrival_ns : a.sequence > b.sequence;
  }

  int32_t block_tokens = kDefaultGeneratedBlockTokens;
  int64_t num_requests = 0;  // 0 = no limit
  int64_t duration_ns = 0;   // 0 = no limit
  double decode_s_per_token = 0;
  std::vector<ClassModel> classes;
  std::optional<DiscreteTable> class_choice;  // when more than one class
  std::unique_ptr<ArrivalProcess> arrivals;
  Rng rng;
  uint64_t segment_salt = 0;
  uint64_t next_segment = 0;
  TraceInfo info;

  std::vector<Entry> heap;
  std::vector<std::unique_ptr<Session>> free_sessions;
  uint64_t next_sequence = 0;
  int64_t next_session_id = 0;
  int64_t emitted = 0;
  int64_t open_sessions = 0;
  bool done = false;
  absl::Status status;

  void Push(int64_t arrival_ns, std::unique_ptr<Session> session) {
    heap.push_back({arrival_ns, next_sequence++, std::move(session)});
    std::push_heap(heap.begin(), heap.end(), Later);
  }
  uint64_t NewSegment() { return Mix64(segment_salt ^ Mix64(next_segment++)); }
  // Pulls the next session start from the arrival process into the heap.
  void ScheduleNextSessionStart();
  void StartSession(int64_t arrival_ns);
  // Fills session->next for turn `turn` (1-based; context already appended) at `arrival_ns`.
  void FillNext(Session* session, int64_t arrival_ns, int32_t turn);
  // Prepares the turn after `prev`, the session's request just emitted; false when the session ends.
  bool Advance(Session* session, const Request& prev, int64_t* arrival_ns);
  void Recycle(std::unique_ptr<Session> session);
  bool Next(Request* request);
};

void WorkloadGenerator::Impl::ScheduleNextSessionStart() {
  int64_t t_ns;
  if (arrivals->Next(&t_ns)) {
    Push(t_ns, nullptr);
  } else if (!arrivals->status().ok()) {
    status = arrivals->status();
  }
}

void WorkloadGenerator::Impl::StartSession(int64_t arrival_ns) {
  std::unique_ptr<Session> session;
  if (free_sessions.empty()) {
    session = std::make_unique<Session>(block_tokens);
  } else {
    session = std::move(free_sessions.back());
    free_sessions.pop_back();
  }
  ++open_sessions;
  const int class_index = class_choice ? static_cast<int>(class_choice->Sample(rng)) : 0;
  const ClassModel& model = classes[class_index];
  session->model = &model;
  session->last_request_id = -1;
  session->next.Clear();
  session->chain.Clear();
  if (model.prompt_popularity && (model.prompt_probability >= 1 || SampleUniform01(rng) < model.prompt_probability)) {
    const int64_t k = model.prompt_popularity->Sample(rng);
    session->chain.Append(Mix64(model.prompt_salt ^ static_cast<uint64_t>(k)), model.prompt_tokens[k]);
  }
  if (model.kind == SessionKind::kSingleTurn) {
    session->session_id = -1;
    session->num_turns = 1;
  } else {
    session->session_id = next_session_id++;
    session->num_turns = std::clamp<int64_t>(model.count->SampleTokens(rng), 1, kMaxTurns);
  }
  // The user message or task; a request has at least one prompt token (no system prompt and a draw of 0
  // give 1: replay refuses empty prompts).
  const int64_t floor = session->chain.num_tokens() > 0 ? 0 : 1;
  session->chain.Append(NewSegment(), std::max<int64_t>(floor, model.input->SampleTokens(rng)));
  FillNext(session.get(), arrival_ns, 1);
  Push(arrival_ns, std::move(session));
}

void WorkloadGenerator::Impl::FillNext(Session* session, int64_t arrival_ns, int32_t turn) {
  const ClassModel& model = *session->model;
  Request& next = session->next;
  next.Clear();
  next.arrival_ns = arrival_ns;
  next.session_id = session->session_id;
  next.turn = model.kind == SessionKind::kSingleTurn ? 0 : turn;
  next.input_tokens = session->chain.num_tokens();
  next.output_tokens = model.output->SampleTokens(rng);
  next.block_tokens = block_tokens;
  session->chain.BlockIds(&next.block_hashes);
  if (model.kind == SessionKind::kAgent && turn < session->num_turns) {
    const int tool = model.program.empty() ? static_cast<int>(model.tool_choice->Sample(rng))
                                           : model.program[(turn - 1) % model.program.size()];
    const ToolModel& t = model.tools[tool];
    const double duration_s = t.duration_s.SampleSeconds(rng);
    next.tool_calls.push_back({t.name, AddSeconds(0, duration_s)});
    session->pending_result_tokens = t.result_tokens.SampleTokens(rng);
  }
}

bool WorkloadGenerator::Impl::Advance(Session* session, const Request& prev, int64_t* arrival_ns) {
  const ClassModel& model = *session->model;
  if (prev.turn >= session->num_turns || model.kind == SessionKind::kSingleTurn) return false;
  int64_t t = AddSeconds(prev.arrival_ns, prev.output_tokens * decode_s_per_token);
  session->chain.Append(NewSegment(), prev.output_tokens);  // the response, re-read by the next turn
  if (model.kind == SessionKind::kChat) {
    t = AddSeconds(t, model.think_s->SampleSeconds(rng));
    session->chain.Append(NewSegment(), model.input->SampleTokens(rng));
  } else {
    t = std::min(kMaxArrivalNs, t + prev.tool_calls.front().duration_ns);
    session->chain.Append(NewSegment(), session->pending_result_tokens);
  }
  if (t >= kMaxArrivalNs) return false;
  if (model.max_context_tokens > 0 && session->chain.num_tokens() > model.max_context_tokens) return false;
  FillNext(session, t, prev.turn + 1);
  *arrival_ns = t;
  return true;
}

void WorkloadGenerator::Impl::Recycle(std::unique_ptr<Session> session) {
  --open_sessions;
  free_sessions.push_back(std::move(session));
}

bool WorkloadGenerator::Impl::Next(Request* request) {
  while (status.ok() && !done) {
    if (heap.empty() || (num_requests > 0 && emitted >= num_requests) ||
        (duration_ns > 0 && heap.front().arrival_ns >= duration_ns)) {
      done = true;
      break;
    }
    std::pop_heap(heap.begin(), heap.end(), Later);
    Entry entry = std::move(heap.back());
    heap.pop_back();
    if (entry.session == nullptr) {
      StartSession(entry.arrival_ns);
      ScheduleNextSessionStart();
      continue;
    }
    Session* session = entry.session.get();
    // Swap rather than copy: the caller gets the prepared request, and the session reuses the vectors
    // of the caller's previous one for its next request.
    std::swap(*request, session->next);
    request->request_id = static_cast<uint64_t>(emitted++);
    request->parent_id = session->last_request_id;
    session->last_request_id = static_cast<int64_t>(request->request_id);
    int64_t next_arrival_ns;
    if (Advance(session, *request, &next_arrival_ns)) {
      Push(next_arrival_ns, std::move(entry.session));
    } else {
      Recycle(std::move(entry.session));
    }
    return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<WorkloadGenerator>> WorkloadGenerator::Create(const proto::WorkloadSpec& spec,
                                                                             uint64_t seed,
                                                                             const TraceOpener& open_trace) {
  auto impl = std::make_unique<Impl>();
  if (spec.block_tokens() < 0) {
    return Invalid("block_tokens",
                   absl::StrCat("must be >= 0 (0 = ", kDefaultGeneratedBlockTokens, "), got ", spec.block_tokens()));
  }
  if (spec.block_tokens() > 0) impl->block_tokens = spec.block_tokens();
  if (spec.num_requests() < 0 || spec.num_requests() > kMaxGeneratedRequests) {
    return Invalid("num_requests", absl::StrCat("must be in [0, ", kMaxGeneratedRequests, "] (0 = no limit), got ",
                                                spec.num_requests()));
  }
  impl->num_requests = spec.num_requests();
  KVSIM_RETURN_IF_ERROR(CheckFiniteNonNegative(spec.duration_s(), "duration_s"));
  // A duration under 1 ns would round to 0, which means "no limit".
  if (spec.duration_s() != 0 && !(spec.duration_s() >= 1e-9 && spec.duration_s() <= 4e9)) {
    return Invalid("duration_s",
                   absl::StrFormat("must be 0 (no limit) or in [1e-9, 4e9] s, got %g", spec.duration_s()));
  }
  impl->duration_ns = SecondsToNs(spec.duration_s());
  KVSIM_RETURN_IF_ERROR(CheckFiniteNonNegative(spec.decode_s_per_token(), "decode_s_per_token"));
  impl->decode_s_per_token = spec.decode_s_per_token();
  if (!spec.has_arrivals()) return Invalid("arrivals", "required (poisson, gamma or replay)");
  if (spec.classes().empty()) return Invalid("classes", "needs at least one workload class");
  std::vector<double> weights;
  for (int i = 0; i < spec.classes_size(); ++i) {
    KVSIM_RETURN_IF_ERROR(CheckFiniteNonNegative(spec.classes(i).weight(), absl::StrCat("classes[", i, "].weight")));
    weights.push_back(spec.classes(i).weight() == 0 ? 1 : spec.classes(i).weight());
    KVSIM_ASSIGN_OR_RETURN(ClassModel model, BuildClass(spec.classes(i), i, seed, open_trace));
    impl->classes.push_back(std::move(model));
  }
  if (weights.size() > 1) impl->class_choice = DiscreteTable(weights);
  KVSIM_ASSIGN_OR_RETURN(impl->arrivals, CreateArrivalProcess(spec.arrivals(), seed, open_trace, "arrivals"));
  if (spec.num_requests() == 0 && spec.duration_s() == 0 && !impl->arrivals->finite()) {
    return Invalid("num_requests",
                   "num_requests and duration_s are both 0 and the arrivals never end: set one of them");
  }
  impl->rng.seed(SeedFor(seed, kContentStream));
  impl->segment_salt = SeedFor(seed, kSegmentSaltStream);
  impl->info.path = spec.name();
  impl->info.format = "generated";
  impl->info.block_tokens = impl->block_tokens;
  impl->ScheduleNextSessionStart();
  KVSIM_RETURN_IF_ERROR(impl->status);
  return std::unique_ptr<WorkloadGenerator>(new WorkloadGenerator(std::move(impl)));
}

WorkloadGenerator::WorkloadGenerator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkloadGenerator::~WorkloadGenerator() = default;

bool WorkloadGenerator::Next(Request* request) { return impl_->Next(request); }
absl::Status WorkloadGenerator::status() const { return impl_->status; }
const TraceInfo& WorkloadGenerator::info() const { return impl_->info; }
int64_t WorkloadGenerator::open_sessions() const { return impl_->open_sessions; }

absl::Status GenerateWorkload(const proto::WorkloadSpec& spec, uint64_t seed,
                              const std::function<absl::Status(const Request&)>& sink, const TraceOpener& open_trace) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<WorkloadGenerator> generator,
                         WorkloadGenerator::Create(spec, seed, open_trace));
  Request request;
  while (generator->Next(&request)) KVSIM_RETURN_IF_ERROR(sink(request));
  return generator->status();
}

uint64_t EffectiveSeed(const proto::WorkloadSpec& spec, uint64_t flag_seed) {
  return flag_seed != 0 ? flag_seed : spec.seed();
}

}  // namespace kvsim
