#include "sim/serving/session_metrics.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/results.pb.h"
#include "sim/serving/observer.h"

namespace kvsim {
namespace {

RequestState Finished(int64_t session_id, SimTime arrival_ns, SimTime scheduled_ns, bool rejected = false) {
  RequestState state;
  state.request.session_id = session_id;
  state.arrival_ns = arrival_ns;
  state.first_scheduled_ns = rejected ? -1 : scheduled_ns;
  state.rejected = rejected;
  return state;
}

TEST(SessionMetricsTest, HandComputedJobs) {
  SessionMetrics sessions;
  sessions.OnRequestFinished(400, Finished(5, 100, 150));
  sessions.OnRequestFinished(60, Finished(2, 50, 0, /*rejected=*/true));
  sessions.OnRequestFinished(70, Finished(-1, 10, 20));  // not a job
  sessions.OnRequestFinished(900, Finished(5, 300, 320));
  proto::Results results;
  ASSERT_TRUE(sessions.Fill(false, &results).ok());
  ASSERT_EQ(results.sessions_size(), 2);
  const proto::SessionResult& rejected = results.sessions(0);
  EXPECT_EQ(rejected.session_id(), 2);
  EXPECT_EQ(rejected.num_requests(), 1);
  EXPECT_FALSE(rejected.finished());
  EXPECT_EQ(rejected.completion_ns(), 10);
  EXPECT_EQ(rejected.queueing_ns(), 0);
  const proto::SessionResult& job = results.sessions(1);
  EXPECT_EQ(job.session_id(), 5);
  EXPECT_EQ(job.num_requests(), 2);
  EXPECT_TRUE(job.finished());
  EXPECT_EQ(job.first_arrival_ns(), 100);
  EXPECT_EQ(job.last_finish_ns(), 900);
  EXPECT_EQ(job.completion_ns(), 800);
  EXPECT_EQ(job.queueing_ns(), 50 + 20);
  const proto::SessionSummary& summary = results.summary().sessions();
  EXPECT_EQ(summary.num_jobs(), 2);
  EXPECT_EQ(summary.finished_jobs(), 1);
  EXPECT_DOUBLE_EQ(summary.mean_requests_per_job(), 1.5);
  EXPECT_DOUBLE_EQ(summary.job_completion_ms().p50(), 800 / 1e6);
  EXPECT_DOUBLE_EQ(summary.job_queueing_ms().max(), 70 / 1e6);
}

TEST(SessionMetricsTest, NoSessionsLeavesTheResultsUnset) {
  SessionMetrics sessions;
  sessions.OnRequestFinished(70, Finished(-1, 10, 20));
  proto::Results results;
  ASSERT_TRUE(sessions.Fill(true, &results).ok());
  EXPECT_EQ(results.sessions_size(), 0);
  EXPECT_FALSE(results.summary().has_sessions());
}

struct Finish {
  SimTime now_ns;
  RequestState state;
};

// Requests of `num_sessions` sessions finishing in random order, some rejected.
std::vector<Finish> RandomFinishes(int num_requests, int num_sessions, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Finish> finishes;
  for (int i = 0; i < num_requests; ++i) {
    const int64_t session = static_cast<int64_t>(rng() % num_sessions) * 7 - 3;  // some ids negative: no job
    const SimTime arrival = static_cast<SimTime>(rng() % 1000000);
    const SimTime scheduled = arrival + static_cast<SimTime>(rng() % 5000);
    const SimTime finish = scheduled + static_cast<SimTime>(rng() % 100000);
    finishes.push_back({finish, Finished(session, arrival, scheduled, rng() % 50 == 0)});
  }
  return finishes;
}

// Every job by brute force: what each session's requests give, computed here independently.
std::map<int64_t, proto::SessionResult> Reference(const std::vector<Finish>& finishes) {
  std::map<int64_t, std::vector<const Finish*>> by_session;
  for (const Finish& f : finishes) {
    if (f.state.request.session_id >= 0) by_session[f.state.request.session_id].push_back(&f);
  }
  std::map<int64_t, proto::SessionResult> jobs;
  for (const auto& [id, requests] : by_session) {
    proto::SessionResult& job = jobs[id];
    job.set_session_id(id);
    job.set_num_requests(static_cast<int32_t>(requests.size()));
    bool finished = true;
    SimTime first = requests[0]->state.arrival_ns, last = requests[0]->now_ns, queueing = 0;
    for (const Finish* f : requests) {
      finished = finished && !f->state.rejected;
      first = std::min(first, f->state.arrival_ns);
      last = std::max(last, f->now_ns);
      if (!f->state.rejected) queueing += f->state.first_scheduled_ns - f->state.arrival_ns;
    }
    job.set_finished(finished);
    job.set_first_arrival_ns(first);
    job.set_last_finish_ns(last);
    job.set_completion_ns(last - first);
    job.set_queueing_ns(queueing);
  }
  return jobs;
}

class CollectingSink final : public ResultsSink {
 public:
  void AddRequest(const proto::RequestResult&) override {}
  void AddPoint(const proto::TimeSeriesPoint&) override {}
  void AddSession(const proto::SessionResult& session) override { sessions.push_back(session); }
  std::vector<proto::SessionResult> sessions;
};

// Spilling at any bound gives the records of the brute-force reference and the same bytes as holding every
// job; with a sink, the same records arrive at the sink in the same order.
TEST(SessionMetricsTest, SpilledRunsMergeToTheRecordsOfHoldingEveryJob) {
  const std::vector<Finish> finishes = RandomFinishes(3000, 400, 11);
  const std::map<int64_t, proto::SessionResult> reference = Reference(finishes);
  std::string whole;
  for (const int64_t memory_records : {int64_t{1} << 16, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{100}}) {
    SCOPED_TRACE(memory_records);
    for (const bool with_sink : {false, true}) {
      CollectingSink sink;
      SessionMetrics sessions({.memory_records = memory_records, .sink = with_sink ? &sink : nullptr});
      for (const Finish& f : finishes) sessions.OnRequestFinished(f.now_ns, f.state);
      if (memory_records < 400) {
        EXPECT_GT(sessions.spilled_runs(), 0);
      } else {
        EXPECT_EQ(sessions.spilled_runs(), 0);
      }
      proto::Results results;
      ASSERT_TRUE(sessions.Fill(true, &results).ok());
      std::vector<proto::SessionResult> got(results.sessions().begin(), results.sessions().end());
      if (with_sink) {
        EXPECT_EQ(results.sessions_size(), 0);
        got = sink.sessions;
        *results.mutable_sessions() = {sink.sessions.begin(), sink.sessions.end()};
      }
      ASSERT_EQ(got.size(), reference.size());
      auto expected = reference.begin();
      for (const proto::SessionResult& job : got) {
        EXPECT_EQ(job.SerializeAsString(), expected->second.SerializeAsString()) << "session " << job.session_id();
        ++expected;
      }
      const std::string bytes = results.SerializeAsString();
      if (whole.empty()) whole = bytes;
      EXPECT_EQ(bytes, whole);
      EXPECT_EQ(results.summary().sessions().num_jobs(), static_cast<int64_t>(reference.size()));
    }
  }
}

}  // namespace
}  // namespace kvsim
