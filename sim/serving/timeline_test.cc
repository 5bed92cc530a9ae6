#include "sim/serving/timeline.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/json_text.h"

namespace kvsim {
namespace {

// The trace events of a finished in-memory timeline, parsed back with nlohmann-json.
Json Events(const TimelineRecorder& timeline) {
  Json doc = Json::parse(timeline.Json());  // throws (failing the test) on invalid JSON
  return doc.at("traceEvents");
}

std::vector<Json> WithPhase(const Json& events, const std::string& phase) {
  std::vector<Json> out;
  for (const Json& event : events) {
    if (event.at("ph") == phase) out.push_back(event);
  }
  return out;
}

IterationRecord Iteration(SimTime start_ns, int64_t duration_ns) {
  IterationRecord iteration;
  iteration.start_ns = start_ns;
  iteration.duration_ns = duration_ns;
  return iteration;
}

TEST(TimelineRecorderTest, WritesValidTraceEvents) {
  TimelineRecorder timeline({.max_events = 100});
  IterationRecord iteration = Iteration(1500, 2000001);
  iteration.replica = 1;
  iteration.transfer_ns = 250;
  const std::vector<TierTransfer> transfers = {
      {.tier = 1, .tier_name = "host", .load_bytes = 4096, .offload_bytes = 0, .duration_ns = 200},
      {.tier = 2, .tier_name = "remote", .load_bytes = 0, .offload_bytes = 8192, .duration_ns = 50}};
  iteration.transfers = &transfers;
  iteration.evicted_blocks = 3;
  iteration.batch_size = 4;
  timeline.OnIteration(iteration);
  RequestState state;
  state.request.request_id = 42;
  state.replica = 1;
  state.arrival_ns = 1000;
  state.first_token_ns = 3500;
  timeline.OnRequestFinished(5000, state);
  timeline.OnRunEnd(5000, {nullptr, nullptr});

  const Json events = Events(timeline);
  // iteration, 2 transfers, eviction, 3 counters (blocks 0, waiting 0, batch 4), batch 0 at the end,
  // request begin / first token / end, and for each of 2 replicas a process name and 4 track names.
  EXPECT_EQ(events.size(), 11u + 2 * 5);
  const Json& first = events.at(0);
  EXPECT_EQ(first.at("ph"), "X");
  EXPECT_DOUBLE_EQ(first.at("ts").get<double>(), 1.5);  // microseconds
  EXPECT_DOUBLE_EQ(first.at("dur").get<double>(), 2000.001);
  EXPECT_EQ(first.at("args").at("batch_size"), 4);
  // Exact microseconds in the text: 2000001 ns is 2000.001 us, not a rounded neighbour.
  EXPECT_NE(timeline.Json().find("\"ts\":1.5,\"dur\":2000.001,"), std::string::npos) << timeline.Json();
  const Json& host = events.at(1);
  EXPECT_EQ(host.at("name"), "transfer");
  EXPECT_EQ(host.at("args").at("tier"), "host");
  EXPECT_EQ(host.at("args").at("direction"), "load");
  EXPECT_EQ(host.at("args").at("bytes"), 4096);
  EXPECT_DOUBLE_EQ(host.at("dur").get<double>(), 0.2);
  const Json& remote = events.at(2);
  EXPECT_EQ(remote.at("args").at("direction"), "offload");
  EXPECT_EQ(remote.at("args").at("offload_bytes"), 8192);
  EXPECT_DOUBLE_EQ(remote.at("ts").get<double>(), 1.7);  // after the host tier's 200 ns
  const std::vector<Json> ends = WithPhase(events, "e");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("id"), 42);
  EXPECT_DOUBLE_EQ(ends[0].at("ts").get<double>(), 5.0);
}

TEST(TimelineRecorderTest, CounterTracksChangeOnlyWhenTheValueDoes) {
  TimelineRecorder timeline({.max_events = 1000});
  // (start, blocks used, waiting, batch): the 2nd repeats the 1st; the 3rd follows an idle gap.
  struct Step {
    SimTime start_ns;
    int64_t blocks, waiting;
    int32_t batch;
  };
  const Step steps[] = {{0, 10, 2, 3}, {100, 10, 2, 3}, {500, 12, 0, 3}, {600, 12, 0, 1}};
  for (const Step& step : steps) {
    IterationRecord r = Iteration(step.start_ns, 100);
    r.gpu_blocks_used = step.blocks;
    r.queued_requests = step.waiting;
    r.batch_size = step.batch;
    timeline.OnIteration(r);
  }
  timeline.OnRunEnd(700, {nullptr});
  std::vector<std::pair<std::string, double>> got;  // (name, ts) per counter event, with its value checked
  std::vector<int64_t> values;
  for (const Json& c : WithPhase(Events(timeline), "C")) {
    got.emplace_back(c.at("name").get<std::string>(), c.at("ts").get<double>());
    values.push_back(c.at("args").begin()->get<int64_t>());
  }
  // Hand count: at 0 all three; at 200 (the end of the 2nd iteration) the batch empties; at 500 blocks,
  // waiting and batch (back to 3); at 600 the batch; at 700 (the run's last iteration ends) batch 0.
  const std::vector<std::pair<std::string, double>> want = {
      {"GPU KV blocks used", 0.0}, {"requests waiting", 0.0},   {"batch size", 0.0},
      {"batch size", 0.2},         {"GPU KV blocks used", 0.5}, {"requests waiting", 0.5},
      {"batch size", 0.5},         {"batch size", 0.6},         {"batch size", 0.7}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(values, (std::vector<int64_t>{10, 2, 3, 0, 12, 0, 3, 1, 0}));
}

TEST(TimelineRecorderTest, StopsAtTheEventCapAndCountsWhatItDropped) {
  TimelineRecorder timeline({.max_events = 2});
  for (int i = 0; i < 5; ++i) timeline.OnIteration(Iteration(i * 1000, 1000));
  timeline.OnRunEnd(5000, {nullptr});
  // Hand count: iteration 0 brings 4 events (itself and the 3 counters' first values); written are the
  // iteration and the blocks counter. Dropped: the other 2 counters at t=0 and iterations 1..4 (their
  // values repeat, so no more counters).
  EXPECT_TRUE(timeline.truncated());
  EXPECT_EQ(timeline.num_events(), 2);
  EXPECT_EQ(timeline.dropped_events(), 6);
  EXPECT_EQ(timeline.truncated_at_ns(), 0);  // the counters at the first iteration were the first left out
  const Json events = Events(timeline);
  EXPECT_EQ(events.size(), 2u + 5 + 1);
  const Json& last = events.back();
  EXPECT_EQ(last.at("name"), "truncated");
  EXPECT_EQ(last.at("args").at("dropped_events"), 6);
}

TEST(TimelineRecorderTest, TruncationTimeIsTheFirstDroppedEventsClock) {
  TimelineRecorder timeline({.max_events = 4});
  // 4 events at t=0 (iteration and 3 counters), then 1 per iteration.
  for (int i = 0; i < 3; ++i) timeline.OnIteration(Iteration(i * 1000, 1000));
  RequestState state;
  state.arrival_ns = 0;
  timeline.OnRequestFinished(3000, state);  // 2 events (begin, end; no first token)
  timeline.OnRunEnd(3000, {nullptr});
  EXPECT_EQ(timeline.num_events(), 4);
  // Iterations 1 and 2, the request's begin and end (the batch was 0 throughout: no counter at the end).
  EXPECT_EQ(timeline.dropped_events(), 2 + 2);
  EXPECT_EQ(timeline.truncated_at_ns(), 1000);
}

TEST(TimelineRecorderTest, KeepsOnlyEventsOverlappingTheWindow) {
  TimelineRecorder timeline({.max_events = 1000, .window_start_ns = 1500, .window_end_ns = 3000});
  for (int i = 0; i < 5; ++i) {
    IterationRecord r = Iteration(i * 1000, 1000);
    r.gpu_blocks_used = i;
    timeline.OnIteration(r);
  }
  RequestState early, inside, late;
  early.request.request_id = 1;
  early.arrival_ns = 0;
  timeline.OnRequestFinished(1200, early);  // ends before the window
  inside.request.request_id = 2;
  inside.arrival_ns = 500;
  timeline.OnRequestFinished(2000, inside);  // overlaps it: kept whole
  late.request.request_id = 3;
  late.arrival_ns = 3000;
  timeline.OnRequestFinished(4000, late);  // starts at its end
  timeline.OnRunEnd(5000, {nullptr});
  const Json events = Events(timeline);
  std::vector<double> iterations;
  for (const Json& e : WithPhase(events, "X")) iterations.push_back(e.at("ts").get<double>());
  EXPECT_EQ(iterations, (std::vector<double>{1.0, 2.0}));  // [1000, 2000) and [2000, 3000)
  const std::vector<Json> begins = WithPhase(events, "b");
  ASSERT_EQ(begins.size(), 1u);
  EXPECT_EQ(begins[0].at("id"), 2);
  EXPECT_DOUBLE_EQ(begins[0].at("ts").get<double>(), 0.5);
  // Counters start afresh inside the window: blocks 1 at 1 us and 2 at 2 us; waiting and batch 0 at 1 us.
  EXPECT_EQ(WithPhase(events, "C").size(), 4u);
  EXPECT_FALSE(timeline.truncated());
}

}  // namespace
}  // namespace kvsim
