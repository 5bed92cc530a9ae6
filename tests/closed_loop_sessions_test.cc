// Closed-loop sessions (workload.closed_loop_sessions) on a generated agent workload: every call after the
// first of its session is issued exactly when its predecessor finished plus the predecessor's tool time,
// never before; open loop, on the same trace, issues calls while their predecessor still runs. Job
// metrics are checked against the per-request results.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "cost_models/roofline.h"
#include "gtest/gtest.h"
#include "proto/workload.pb.h"
#include "sim/serving/engine.h"
#include "sim/serving/observer.h"
#include "sim/serving/replay.h"
#include "sim/serving/testing/test_util.h"
#include "traces/generators/workload_generator.h"
#include "traces/trace_reader.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// presets/workloads/agent.textproto at a higher session rate, no response-time estimate in the gaps.
constexpr char kAgentSpec[] = R"pb(
  name: "agent-small"
  seed: 3
  block_tokens: 16
  num_requests: 300
  arrivals {
    poisson {}
    rate_per_s: 2
  }
  classes {
    name: "swe-agent"
    system_prompts { prompt_tokens: 3000 }
    agent {
      calls { uniform { min: 3 max: 12 } }
      task_tokens { lognormal { median: 800 sigma: 0.6 } }
      output_tokens {
        lognormal { median: 150 sigma: 0.7 }
        min_value: 1
        max_value: 2000
      }
      tools {
        name: "bash"
        weight: 5
        duration_s {
          lognormal { median: 1.5 sigma: 1.2 }
          max_value: 300
        }
        result_tokens {
          lognormal { median: 400 sigma: 1.3 }
          max_value: 8000
        }
      }
      tools {
        name: "edit"
        weight: 3
        duration_s { fixed { value: 0.2 } }
        result_tokens { lognormal { median: 150 sigma: 0.5 } }
      }
      max_context_tokens: 32000
    }
  }
)pb";

std::vector<Request> AgentTrace() {
  proto::WorkloadSpec spec;
  const absl::Status parsed = ParseTextProto(kAgentSpec, "agent-small", &spec);
  EXPECT_TRUE(parsed.ok()) << parsed;
  auto generator = WorkloadGenerator::Create(spec, 3, nullptr);
  EXPECT_TRUE(generator.ok()) << generator.status();
  std::vector<Request> requests;
  Request r;
  while ((*generator)->Next(&r)) requests.push_back(r);
  EXPECT_TRUE((*generator)->status().ok());
  return requests;
}

struct Times {
  int64_t issue_ns = -1, finish_ns = -1;
};

class TimesLog : public EngineObserver {
 public:
  void OnArrival(SimTime now_ns, const RequestState& s) override { times[s.request.request_id].issue_ns = now_ns; }
  void OnRequestFinished(SimTime now_ns, const RequestState& s) override {
    times[s.request.request_id].finish_ns = now_ns;
  }
  std::map<uint64_t, Times> times;
};

proto::ExperimentConfig Config(bool closed_loop) {
  proto::ExperimentConfig overrides;
  overrides.mutable_workload()->set_closed_loop_sessions(closed_loop);
  return TestConfig(200000, overrides);
}

std::map<uint64_t, Times> Replay(const std::vector<Request>& trace, bool closed_loop) {
  const proto::ExperimentConfig config = Config(closed_loop);
  auto cost = RooflineCostModel::Create(config);
  EXPECT_TRUE(cost.ok()) << cost.status();
  VectorTraceReader reader(trace, TraceInfo{"agent-small", "generated", 16});
  auto engine = Engine::Create(config, cost->get(), 16);
  EXPECT_TRUE(engine.ok()) << engine.status();
  TimesLog log;
  (*engine)->AddObserver(&log);
  const absl::Status run = (*engine)->Run(&reader);
  EXPECT_TRUE(run.ok()) << run;
  return log.times;
}

int64_t ToolNs(const Request& r) {
  int64_t ns = 0;
  for (const ToolCall& call : r.tool_calls) ns += call.duration_ns;
  return ns;
}

TEST(ClosedLoopSessionsTest, NoCallBeforeItsPredecessorEndsPlusItsTool) {
  const std::vector<Request> trace = AgentTrace();
  std::map<uint64_t, const Request*> by_id;
  int64_t followers = 0;
  for (const Request& r : trace) {
    by_id[r.request_id] = &r;
    if (r.parent_id >= 0) ++followers;
  }
  ASSERT_GT(followers, 100);
  const std::map<uint64_t, Times> closed = Replay(trace, true);
  const std::map<uint64_t, Times> open = Replay(trace, false);
  ASSERT_EQ(closed.size(), trace.size());
  int64_t open_early = 0;
  for (const Request& r : trace) {
    const Times& t = closed.at(r.request_id);
    ASSERT_GE(t.finish_ns, t.issue_ns);
    if (r.parent_id < 0) {
      EXPECT_EQ(t.issue_ns, r.arrival_ns) << "first call " << r.request_id << " keeps its trace time";
      continue;
    }
    const Request& parent = *by_id.at(static_cast<uint64_t>(r.parent_id));
    ASSERT_EQ(parent.session_id, r.session_id);
    ASSERT_FALSE(parent.tool_calls.empty()) << "an agent call that is followed ends in a tool call";
    EXPECT_EQ(t.issue_ns, closed.at(parent.request_id).finish_ns + ToolNs(parent)) << "call " << r.request_id;
    if (open.at(r.request_id).issue_ns < open.at(parent.request_id).finish_ns + ToolNs(parent)) ++open_early;
  }
  // The open-loop replay of the same trace does issue calls too early: the check above can fail.
  EXPECT_GT(open_early, 0);
}

TEST(ClosedLoopSessionsTest, JobMetricsMatchTheRequests) {
  const std::vector<Request> trace = AgentTrace();
  VectorTraceReader reader(trace, TraceInfo{"agent-small", "generated", 16});
  const proto::ExperimentConfig config = Config(true);
  auto cost = RooflineCostModel::Create(config);
  ASSERT_TRUE(cost.ok());
  ReplayOptions options;
  options.timeline = false;
  auto output = RunReplay(config, **cost, &reader, options);
  ASSERT_TRUE(output.ok()) << output.status();
  const proto::Results& results = output->results;
  std::map<int64_t, std::pair<int64_t, int64_t>> span;  // session -> (first arrival, last finish)
  std::map<int64_t, int64_t> queueing;
  std::map<uint64_t, int64_t> session_of;
  for (const Request& r : trace) session_of[r.request_id] = r.session_id;
  for (const proto::RequestResult& r : results.requests()) {
    const int64_t session = session_of.at(r.request_id());
    auto [it, inserted] = span.try_emplace(session, r.arrival_ns(), r.finish_ns());
    it->second.first = std::min(it->second.first, r.arrival_ns());
    it->second.second = std::max(it->second.second, r.finish_ns());
    queueing[session] += r.queueing_ns();
  }
  ASSERT_EQ(results.sessions_size(), static_cast<int>(span.size()));
  std::vector<double> completion_ms;
  for (const proto::SessionResult& job : results.sessions()) {
    EXPECT_TRUE(job.finished());
    EXPECT_EQ(job.first_arrival_ns(), span.at(job.session_id()).first);
    EXPECT_EQ(job.completion_ns(), span.at(job.session_id()).second - span.at(job.session_id()).first);
    EXPECT_EQ(job.queueing_ns(), queueing.at(job.session_id()));
    completion_ms.push_back(job.completion_ns() / 1e6);
  }
  std::sort(completion_ms.begin(), completion_ms.end());
  const proto::SessionSummary& summary = results.summary().sessions();
  EXPECT_TRUE(summary.closed_loop());
  EXPECT_EQ(summary.finished_jobs(), static_cast<int64_t>(completion_ms.size()));
  EXPECT_DOUBLE_EQ(summary.job_completion_ms().max(), completion_ms.back());
  // Nearest rank: the ceil(0.5 n)-th smallest.
  EXPECT_DOUBLE_EQ(summary.job_completion_ms().p50(), completion_ms[(completion_ms.size() + 1) / 2 - 1]);
}

}  // namespace
}  // namespace kvsim
