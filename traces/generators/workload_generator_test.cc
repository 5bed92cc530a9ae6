#include "traces/generators/workload_generator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

constexpr double kZ = 5;  // tolerances are 5 standard errors (see portable_random_test.cc)

proto::WorkloadSpec Spec(const std::string& text) {
  proto::WorkloadSpec spec;
  const absl::Status status = ParseTextProto(text, "test", &spec);
  EXPECT_TRUE(status.ok()) << status;
  return spec;
}

// A trace whose records arrive at `times` (for replayed arrivals).
TraceOpener TimesOpener(std::vector<int64_t> times) {
  return [times](const std::string& path) -> absl::StatusOr<std::unique_ptr<TraceReader>> {
    if (path != "arrivals.jsonl") return absl::NotFoundError(path + ": no such file");
    std::vector<Request> requests(times.size());
    for (size_t i = 0; i < times.size(); ++i) requests[i].arrival_ns = times[i];
    return std::unique_ptr<TraceReader>(new VectorTraceReader(requests, TraceInfo{path, "test", 0}));
  };
}

std::vector<Request> Generate(const proto::WorkloadSpec& spec, uint64_t seed, const TraceOpener& open = nullptr) {
  std::vector<Request> out;
  const absl::Status status = GenerateWorkload(
      spec, seed,
      [&](const Request& r) {
        out.push_back(r);
        return absl::OkStatus();
      },
      open);
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

// The number of leading blocks two requests share.
int SharedPrefixBlocks(const Request& a, const Request& b) {
  int k = 0;
  while (k < static_cast<int>(std::min(a.block_hashes.size(), b.block_hashes.size())) &&
         a.block_hashes[k] == b.block_hashes[k]) {
    ++k;
  }
  return k;
}

// One chat session at t = 0 (replayed), 3 turns, 20 new user tokens and 10 response tokens per turn,
// 2 s think time, 0.01 s per generated token, 16-token blocks, no system prompt.
//   turn 1: input 20;                    arrival 0
//   turn 2: input 20 + 10 + 20 = 50;     arrival 0 + 10 x 0.01 + 2 = 2.1 s
//   turn 3: input 50 + 10 + 20 = 80;     arrival 2.1 + 0.1 + 2 = 4.2 s
// Blocks: turn 1 has ceil(20/16) = 2 (1 full + 4 tokens); turn 2 has ceil(50/16) = 4 (3 full + 2);
// turn 3 has 80/16 = 5 full. Turn 2 shares exactly turn 1's one full block; turn 3 shares exactly turn
// 2's three full blocks.
TEST(WorkloadGeneratorTest, ThreeTurnChatByHand) {
  const proto::WorkloadSpec spec = Spec(R"(
    block_tokens: 16
    decode_s_per_token: 0.01
    arrivals { replay { trace_path: "arrivals.jsonl" } }
    classes { chat {
      turns { fixed { value: 3 } }
      input_tokens { fixed { value: 20 } }
      output_tokens { fixed { value: 10 } }
      think_time_s { fixed { value: 2 } }
    } })");
  const std::vector<Request> r = Generate(spec, 1, TimesOpener({0}));
  ASSERT_EQ(r.size(), 3u);
  const int64_t inputs[] = {20, 50, 80};
  const int64_t arrivals[] = {0, 2100000000, 4200000000};
  const size_t blocks[] = {2, 4, 5};
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(r[k].request_id, static_cast<uint64_t>(k));
    EXPECT_EQ(r[k].parent_id, k - 1);
    EXPECT_EQ(r[k].session_id, 0);
    EXPECT_EQ(r[k].turn, k + 1);
    EXPECT_EQ(r[k].input_tokens, inputs[k]);
    EXPECT_EQ(r[k].output_tokens, 10);
    EXPECT_EQ(r[k].arrival_ns, arrivals[k]);
    EXPECT_EQ(r[k].block_tokens, 16);
    EXPECT_EQ(r[k].block_hashes.size(), blocks[k]);
    EXPECT_TRUE(r[k].tool_calls.empty());
  }
  EXPECT_EQ(SharedPrefixBlocks(r[0], r[1]), 1);
  EXPECT_EQ(SharedPrefixBlocks(r[1], r[2]), 3);
  // And nothing beyond the prefix: no id of a later block appears in the other request.
  EXPECT_EQ(std::count(r[2].block_hashes.begin(), r[2].block_hashes.end(), r[1].block_hashes[3]), 0);
}

// Two single-turn requests with the same 40-token system prompt and 20 own tokens each: input 60 =
// 4 blocks; blocks 0-1 are pure system prompt (shared), block 2 mixes 8 system and 8 own tokens.
TEST(WorkloadGeneratorTest, SharedSystemPromptSharesItsFullBlocks) {
  const proto::WorkloadSpec spec = Spec(R"(
    arrivals { replay { trace_path: "arrivals.jsonl" } }
    classes {
      system_prompts { prompt_tokens: 40 }
      single_turn { input_tokens { fixed { value: 20 } } output_tokens { fixed { value: 5 } } }
    })");
  const std::vector<Request> r = Generate(spec, 1, TimesOpener({0, 1000}));
  ASSERT_EQ(r.size(), 2u);
  for (const Request& q : r) {
    EXPECT_EQ(q.input_tokens, 60);
    EXPECT_EQ(q.block_hashes.size(), 4u);
    EXPECT_EQ(q.block_tokens, kDefaultGeneratedBlockTokens);
    EXPECT_EQ(q.session_id, -1);
    EXPECT_EQ(q.turn, 0);
    EXPECT_EQ(q.parent_id, -1);
  }
  EXPECT_EQ(SharedPrefixBlocks(r[0], r[1]), 2);
  EXPECT_EQ(r[1].arrival_ns, 1000);
}

// K = 4 prompts with P(k) proportional to 1/k (H = 25/12): P = 12/25, 6/25, 4/25, 3/25. Each prompt is
// 32 tokens, so the first block id names the prompt.
TEST(WorkloadGeneratorTest, SystemPromptPopularityIsZipf) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 40000
    arrivals { poisson {} rate_per_s: 1000 }
    classes {
      system_prompts { prompt_tokens: [32, 32, 32, 32] zipf_exponent: 1 }
      single_turn { input_tokens { fixed { value: 8 } } output_tokens { fixed { value: 1 } } }
    })");
  const std::vector<Request> r = Generate(spec, 7);
  ASSERT_EQ(r.size(), 40000u);
  std::map<uint64_t, int> counts;
  for (const Request& q : r) ++counts[q.block_hashes[0]];
  ASSERT_EQ(counts.size(), 4u);
  std::vector<int> sorted;
  for (const auto& [id, c] : counts) sorted.push_back(c);
  std::sort(sorted.rbegin(), sorted.rend());
  const double p[] = {12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25};
  const int n = 40000;
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(sorted[k], n * p[k], kZ * std::sqrt(n * p[k] * (1 - p[k]))) << k;
}

TEST(WorkloadGeneratorTest, SystemPromptProbability) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 20000
    arrivals { poisson {} rate_per_s: 1000 }
    classes {
      system_prompts { num_prompts: 1 prompt_tokens_distribution { fixed { value: 64 } } probability: 0.3 }
      single_turn { input_tokens { fixed { value: 10 } } output_tokens { fixed { value: 1 } } }
    })");
  const std::vector<Request> r = Generate(spec, 8);
  int with_prompt = 0;
  for (const Request& q : r) {
    ASSERT_TRUE(q.input_tokens == 74 || q.input_tokens == 10) << q.input_tokens;
    with_prompt += q.input_tokens == 74;
  }
  EXPECT_NEAR(with_prompt, 0.3 * 20000, kZ * std::sqrt(20000 * 0.3 * 0.7));
}

// An agent session (replayed at t = 0): 4 calls, task 100 tokens, 50 output tokens per call, 0.02 s per
// generated token (1 s per call), program bash, edit, bash. bash runs 3 s and returns 200 tokens, edit
// runs 0.5 s and returns 20 tokens. Call k+1 arrives at arrival(k) + 1 s + tool duration:
//   call 1: input 100;               arrival 0;     tool bash (3 s)
//   call 2: input 100 + 50 + 200 = 350; arrival 4 s;   tool edit (0.5 s)
//   call 3: input 350 + 50 + 20 = 420;  arrival 5.5 s; tool bash
//   call 4: input 420 + 50 + 200 = 670; arrival 9.5 s; no tool (the final answer)
TEST(WorkloadGeneratorTest, AgentSessionByHand) {
  const proto::WorkloadSpec spec = Spec(R"(
    decode_s_per_token: 0.02
    arrivals { replay { trace_path: "arrivals.jsonl" } }
    classes { agent {
      calls { fixed { value: 4 } }
      task_tokens { fixed { value: 100 } }
      output_tokens { fixed { value: 50 } }
      tools { name: "bash" duration_s { fixed { value: 3 } } result_tokens { fixed { value: 200 } } }
      tools { name: "edit" duration_s { fixed { value: 0.5 } } result_tokens { fixed { value: 20 } } }
      program: ["bash", "edit"]
    } })");
  const std::vector<Request> r = Generate(spec, 1, TimesOpener({0}));
  ASSERT_EQ(r.size(), 4u);
  const int64_t inputs[] = {100, 350, 420, 670};
  const int64_t arrivals[] = {0, 4000000000, 5500000000, 9500000000};
  const char* tools[] = {"bash", "edit", "bash"};
  const int64_t durations[] = {3000000000, 500000000, 3000000000};
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(r[k].input_tokens, inputs[k]);
    EXPECT_EQ(r[k].arrival_ns, arrivals[k]);
    EXPECT_EQ(r[k].session_id, 0);
    EXPECT_EQ(r[k].turn, k + 1);
    EXPECT_EQ(r[k].parent_id, k - 1);
    if (k < 3) {
      ASSERT_EQ(r[k].tool_calls.size(), 1u);
      EXPECT_EQ(r[k].tool_calls[0].name, tools[k]);
      EXPECT_EQ(r[k].tool_calls[0].duration_ns, durations[k]);
      // The rule as the header states it: previous arrival + decode estimate + tool duration.
      EXPECT_EQ(r[k + 1].arrival_ns, r[k].arrival_ns + 50 * 20000000 + r[k].tool_calls[0].duration_ns);
      // Every full block of call k is shared by call k+1: floor(input / 16).
      EXPECT_EQ(SharedPrefixBlocks(r[k], r[k + 1]), inputs[k] / 16);
    } else {
      EXPECT_TRUE(r[k].tool_calls.empty());
    }
  }
}

// Many concurrent chat sessions with random lengths and think times: output in arrival order, every
// parent is the same session's previous turn, and each turn's prompt extends the previous one by its
// response and a new message, sharing all of the previous turn's full blocks.
TEST(WorkloadGeneratorTest, ConcurrentSessionsMergeInArrivalOrder) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 20000
    decode_s_per_token: 0.005
    arrivals { gamma { cv: 2 } rate_per_s: 5 }
    classes { chat {
      turns { uniform { min: 1 max: 8 } }
      input_tokens { lognormal { median: 200 sigma: 1 } max_value: 4000 }
      output_tokens { lognormal { median: 150 sigma: 0.8 } }
      think_time_s { exponential { mean: 30 } }
    } })");
  const std::vector<Request> r = Generate(spec, 11);
  ASSERT_EQ(r.size(), 20000u);
  std::map<int64_t, const Request*> last_of_session;
  std::set<int64_t> overlapping;
  for (size_t i = 0; i < r.size(); ++i) {
    const Request& q = r[i];
    ASSERT_EQ(q.request_id, i);
    if (i > 0) {
      ASSERT_GE(q.arrival_ns, r[i - 1].arrival_ns);
    }
    auto it = last_of_session.find(q.session_id);
    if (it == last_of_session.end()) {
      ASSERT_EQ(q.parent_id, -1);
      ASSERT_EQ(q.turn, 1);
    } else {
      const Request& p = *it->second;
      ASSERT_EQ(q.parent_id, static_cast<int64_t>(p.request_id));
      ASSERT_EQ(q.turn, p.turn + 1);
      ASSERT_GE(q.input_tokens, p.input_tokens + p.output_tokens);
      ASSERT_GE(q.arrival_ns, p.arrival_ns + std::llround(p.output_tokens * 0.005 * 1e9));
      ASSERT_EQ(SharedPrefixBlocks(p, q), p.input_tokens / 16);
      if (r[p.request_id + 1].session_id != q.session_id) overlapping.insert(q.session_id);
    }
    ASSERT_EQ(static_cast<int64_t>(q.block_hashes.size()), NumBlocks(q.input_tokens, 16));
    last_of_session[q.session_id] = &q;
  }
  EXPECT_GT(overlapping.size(), 100u);  // sessions really interleave
}

TEST(WorkloadGeneratorTest, PoissonSessionArrivalsHaveMeanGapOneOverRate) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 100001
    arrivals { poisson {} rate_per_s: 50 }
    classes { single_turn { input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } } })");
  const std::vector<Request> r = Generate(spec, 3);
  ASSERT_EQ(r.size(), 100001u);
  EXPECT_EQ(r[0].arrival_ns, 0);
  const double mean_gap_s = (r.back().arrival_ns - r.front().arrival_ns) * 1e-9 / 100000;
  EXPECT_NEAR(mean_gap_s, 0.02, kZ * 0.02 / std::sqrt(100000.0));
}

// Classes weighted 3 : 1 between single-turn requests and 2-turn chats: of the sessions started, 3/4 are
// single-turn.
TEST(WorkloadGeneratorTest, ClassWeights) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 30000
    arrivals { poisson {} rate_per_s: 10 }
    classes { weight: 3 single_turn { input_tokens { fixed { value: 1 } }
                                      output_tokens { fixed { value: 1 } } } }
    classes { weight: 1 chat { turns { fixed { value: 2 } } input_tokens { fixed { value: 1 } }
                               output_tokens { fixed { value: 1 } } } })");
  const std::vector<Request> r = Generate(spec, 4);
  int single = 0, chat_sessions = 0;
  for (const Request& q : r) {
    single += q.session_id == -1;
    chat_sessions += q.turn == 1;
  }
  const int sessions = single + chat_sessions;
  EXPECT_NEAR(single, 0.75 * sessions, kZ * std::sqrt(sessions * 0.75 * 0.25));
}

TEST(WorkloadGeneratorTest, DurationLimitCutsAtTheTime) {
  const proto::WorkloadSpec spec = Spec(R"(
    duration_s: 60
    arrivals { poisson {} rate_per_s: 20 }
    classes { chat { turns { fixed { value: 5 } } input_tokens { fixed { value: 1 } }
                     output_tokens { fixed { value: 1 } } think_time_s { fixed { value: 10 } } } })");
  const std::vector<Request> r = Generate(spec, 5);
  ASSERT_FALSE(r.empty());
  for (const Request& q : r) ASSERT_LT(q.arrival_ns, 60000000000);
  EXPECT_GT(r.back().arrival_ns, 59000000000);
  // 60 s at 20/s = 1200 sessions expected (+1 at 0); turns at +0, 10, 20, 30, 40 s: a session started at s
  // contributes min(5, ceil((60 - s)/10)) turns; the integral over s in [0, 60) is 20 x (5 x 20 + 4 x 10
  // + 3 x 10 + 2 x 10 + 1 x 10) = 20 x 200 = 4000 requests.
  // The count is compound Poisson: variance = rate x E[turns^2] <= 1200 x 25, so sd <= sqrt(1200) x 5.
  EXPECT_NEAR(static_cast<double>(r.size()), 4000, kZ * std::sqrt(1200.0) * 5);
}

TEST(WorkloadGeneratorTest, FiniteScheduleEndsWithoutLimits) {
  const proto::WorkloadSpec spec = Spec(R"(
    arrivals { poisson {} schedule { points { time_s: 0 rate_per_s: 100 }
                                     points { time_s: 2 rate_per_s: 0 } } }
    classes { single_turn { input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } } })");
  const std::vector<Request> r = Generate(spec, 6);
  EXPECT_NEAR(static_cast<double>(r.size()), 201, kZ * std::sqrt(200.0));
  for (const Request& q : r) ASSERT_LE(q.arrival_ns, 2000000000);
}

std::string Serialize(const std::vector<Request>& requests) {
  std::string out;
  proto::TraceRecord record;
  for (const Request& r : requests) {
    RequestToProto(r, &record);
    std::string bytes;
    record.SerializeToString(&bytes);
    out += bytes;
  }
  return out;
}

const char kMixedSpec[] = R"(
    num_requests: 5000
    decode_s_per_token: 0.01
    arrivals { gamma { cv: 1.5 } rate_per_s: 4 }
    classes { weight: 2 system_prompts { num_prompts: 5
                                         prompt_tokens_distribution { uniform { min: 100 max: 900 } }
                                         zipf_exponent: 1.1 }
              chat { turns { zipf { min: 1 max: 20 exponent: 1 } }
                     input_tokens { lognormal { median: 100 sigma: 1 } }
                     output_tokens { gamma { mean: 200 cv: 0.8 } }
                     think_time_s { exponential { mean: 20 } } } }
    classes { agent { calls { uniform { min: 2 max: 30 } } task_tokens { fixed { value: 1500 } }
                      output_tokens { lognormal { median: 80 sigma: 0.6 } }
                      tools { name: "bash" weight: 3 duration_s { lognormal { median: 2 sigma: 1 } }
                              result_tokens { lognormal { median: 300 sigma: 1.2 } } }
                      tools { name: "search" duration_s { gamma { mean: 1 cv: 0.5 } }
                              result_tokens { fixed { value: 500 } } } } })";

TEST(WorkloadGeneratorTest, SameSeedByteIdenticalOtherSeedDifferent) {
  const proto::WorkloadSpec spec = Spec(kMixedSpec);
  const std::string a = Serialize(Generate(spec, 99));
  const std::string b = Serialize(Generate(spec, 99));
  const std::string c = Serialize(Generate(spec, 100));
  EXPECT_GT(a.size(), 100000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Arrivals draw from their own engine: changing the lengths does not move the session starts.
TEST(WorkloadGeneratorTest, ArrivalsDoNotDependOnLengths) {
  proto::WorkloadSpec spec = Spec(R"(
    num_requests: 1000
    arrivals { poisson {} rate_per_s: 3 }
    classes { single_turn { input_tokens { fixed { value: 10 } } output_tokens { fixed { value: 1 } } } })");
  std::vector<Request> a = Generate(spec, 12);
  spec.mutable_classes(0)->mutable_single_turn()->mutable_input_tokens()->mutable_lognormal()->set_median(50);
  spec.mutable_classes(0)->mutable_single_turn()->mutable_input_tokens()->mutable_lognormal()->set_sigma(1);
  std::vector<Request> b = Generate(spec, 12);
  ASSERT_EQ(a.size(), b.size());
  bool lengths_differ = false;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].arrival_ns, b[i].arrival_ns);
    lengths_differ |= a[i].input_tokens != b[i].input_tokens;
  }
  EXPECT_TRUE(lengths_differ);
}

// Streaming: the generator holds only open sessions. With chat sessions of 5 turns 10 s apart arriving at
// 10/s, Little's law gives about 10/s x 40 s = 400 open sessions, whatever the number of requests.
TEST(WorkloadGeneratorTest, MemoryIsBoundedByOpenSessions) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 200000
    arrivals { poisson {} rate_per_s: 10 }
    classes { chat { turns { fixed { value: 5 } } input_tokens { fixed { value: 10 } }
                     output_tokens { fixed { value: 10 } } think_time_s { fixed { value: 10 } } } })");
  absl::StatusOr<std::unique_ptr<WorkloadGenerator>> gen = WorkloadGenerator::Create(spec, 1, nullptr);
  ASSERT_TRUE(gen.ok()) << gen.status();
  Request r;
  int64_t n = 0, max_open = 0;
  while ((*gen)->Next(&r)) {
    ++n;
    max_open = std::max(max_open, (*gen)->open_sessions());
  }
  EXPECT_TRUE((*gen)->status().ok());
  EXPECT_EQ(n, 200000);
  EXPECT_GT(max_open, 300);
  EXPECT_LT(max_open, 600);
  EXPECT_EQ((*gen)->info().format, "generated");
}

TEST(WorkloadGeneratorTest, ResampledLengthsComeFromTheTrace) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 2000
    arrivals { poisson {} rate_per_s: 10 }
    classes { single_turn {
      input_tokens { resample { trace_path: "arrivals.jsonl" field: FIELD_INPUT_TOKENS } }
      output_tokens { fixed { value: 1 } } } })");
  TraceOpener open = [](const std::string& path) -> absl::StatusOr<std::unique_ptr<TraceReader>> {
    std::vector<Request> requests(3);
    requests[0].input_tokens = 7, requests[1].input_tokens = 700, requests[2].input_tokens = 7000;
    return std::unique_ptr<TraceReader>(new VectorTraceReader(requests, TraceInfo{path, "test", 0}));
  };
  std::set<int64_t> seen;
  for (const Request& q : Generate(spec, 2, open)) seen.insert(q.input_tokens);
  EXPECT_EQ(seen, (std::set<int64_t>{7, 700, 7000}));
}

TEST(WorkloadGeneratorTest, SinkErrorStopsGeneration) {
  const proto::WorkloadSpec spec = Spec(R"(
    num_requests: 100
    arrivals { poisson {} rate_per_s: 10 }
    classes { single_turn { input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } } })");
  int calls = 0;
  const absl::Status status = GenerateWorkload(
      spec, 1, [&](const Request&) { return ++calls == 3 ? absl::DataLossError("disk full") : absl::OkStatus(); });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(calls, 3);
}

TEST(WorkloadGeneratorTest, EffectiveSeedPrefersTheFlag) {
  proto::WorkloadSpec spec;
  spec.set_seed(17);
  EXPECT_EQ(EffectiveSeed(spec, 0), 17u);
  EXPECT_EQ(EffectiveSeed(spec, 5), 5u);
}

void ExpectInvalid(const std::string& text, const std::string& field) {
  const absl::StatusOr<std::unique_ptr<WorkloadGenerator>> gen =
      WorkloadGenerator::Create(Spec(text), 1, TimesOpener({0}));
  EXPECT_EQ(gen.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_NE(gen.status().message().find(field), std::string::npos) << gen.status();
}

TEST(WorkloadGeneratorTest, APromptHasAtLeastOneToken) {
  // Draws of 0 input tokens with no system prompt: the requests get 1 (replay refuses empty prompts).
  const std::vector<Request> requests = Generate(Spec(R"(
    num_requests: 20 arrivals { poisson {} rate_per_s: 10 }
    classes { single_turn { input_tokens { fixed { value: 0 } } output_tokens { fixed { value: 4 } } } })"),
                                                 7);
  ASSERT_EQ(requests.size(), 20u);
  for (const Request& r : requests) {
    EXPECT_EQ(r.input_tokens, 1);
    EXPECT_EQ(r.block_hashes.size(), 1u);
  }
}

TEST(WorkloadGeneratorTest, InvalidSpecsNameTheField) {
  const std::string arrivals = "num_requests: 10 arrivals { poisson {} rate_per_s: 1 } ";
  const std::string single = "single_turn { input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } }";
  ExpectInvalid("num_requests: 10 classes { " + single + " }", "arrivals: required");
  ExpectInvalid(arrivals, "classes: needs at least one");
  ExpectInvalid(arrivals + "classes { name: \"x\" }", "classes[0]: no session kind set");
  ExpectInvalid("arrivals { poisson {} rate_per_s: 1 } classes { " + single + " }",
                "num_requests: num_requests and duration_s are both 0");
  ExpectInvalid(arrivals + "block_tokens: -16 classes { " + single + " }", "block_tokens");
  ExpectInvalid("num_requests: 1000000000000000000 arrivals { poisson {} rate_per_s: 1 } classes { " + single + " }",
                "num_requests: must be in [0, 100000000]");
  ExpectInvalid(arrivals + "duration_s: -1 classes { " + single + " }", "duration_s");
  ExpectInvalid(arrivals + "decode_s_per_token: -0.1 classes { " + single + " }", "decode_s_per_token");
  ExpectInvalid(arrivals + "classes { " + single + " } classes { weight: -1 " + single + " }", "classes[1].weight");
  ExpectInvalid(arrivals + "classes { single_turn { input_tokens { fixed { value: 1 } } } }",
                "classes[0].single_turn.output_tokens: no distribution set");
  ExpectInvalid(
      arrivals + "classes { chat { input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } } }",
      "classes[0].chat.turns: no distribution set");
  ExpectInvalid(arrivals + "classes { " + single +
                    " } classes { chat { turns { fixed { value: 2 } } "
                    "input_tokens { fixed { value: 1 } } output_tokens { fixed { value: 1 } } "
                    "think_time_s { lognormal { median: 1 sigma: -1 } } } }",
                "classes[1].chat.think_time_s.lognormal.sigma");
  const std::string agent_head =
      "classes { agent { calls { fixed { value: 2 } } task_tokens { fixed { value: 1 } } "
      "output_tokens { fixed { value: 1 } } ";
  ExpectInvalid(arrivals + agent_head + "} }", "classes[0].agent.tools: needs at least one tool");
  ExpectInvalid(arrivals + agent_head + "tools { name: \"a\" } tools { name: \"a\" } } }",
                "classes[0].agent.tools[1].name");
  ExpectInvalid(arrivals + agent_head + "tools { name: \"a\" } program: [\"a\", \"b\"] } }",
                "classes[0].agent.program[1]");
  ExpectInvalid(arrivals + agent_head + "tools { name: \"a\" duration_s { exponential { mean: 0 } } } } }",
                "classes[0].agent.tools[0].duration_s.exponential.mean");
  ExpectInvalid(arrivals + "classes { system_prompts { prompt_tokens: -5 } " + single + " }",
                "classes[0].system_prompts.prompt_tokens[0]");
  ExpectInvalid(arrivals + "classes { system_prompts { num_prompts: 2 } " + single + " }",
                "classes[0].system_prompts.prompt_tokens_distribution: no distribution set");
  ExpectInvalid(
      arrivals + "classes { system_prompts { prompt_tokens_distribution { fixed { value: 9 } } } " + single + " }",
      "classes[0].system_prompts.num_prompts: must be > 0");
  ExpectInvalid(arrivals + "classes { system_prompts { prompt_tokens: 5 probability: 1.5 } " + single + " }",
                "classes[0].system_prompts.probability");
  ExpectInvalid("num_requests: 10 arrivals { gamma { cv: -1 } rate_per_s: 1 } classes { " + single + " }",
                "arrivals.gamma.cv");
}

}  // namespace
}  // namespace kvsim
