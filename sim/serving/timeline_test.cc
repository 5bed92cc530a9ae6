#include "sim/serving/timeline.h"

#include <string>

#include "gtest/gtest.h"
#include "simdjson.h"

namespace kvsim {
namespace {

TEST(TimelineRecorderTest, WritesValidTraceEvents) {
  TimelineRecorder timeline(/*max_events=*/100);
  IterationRecord iteration;
  iteration.replica = 1;
  iteration.start_ns = 1500;
  iteration.duration_ns = 2000001;
  iteration.transfer_ns = 250;
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

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(timeline.Json()).get(doc), simdjson::SUCCESS) << timeline.Json();
  simdjson::dom::array events;
  ASSERT_EQ(doc["traceEvents"].get_array().get(events), simdjson::SUCCESS);
  // iteration, transfer, eviction, request begin / first token / end, and for each of 2 replicas a
  // process name and 4 track names.
  EXPECT_EQ(events.size(), 6u + 2 * 5);
  simdjson::dom::element first = events.at(0);
  EXPECT_EQ(std::string(first["ph"].get_string().value()), "X");
  EXPECT_DOUBLE_EQ(first["ts"].get_double().value(), 1.5);  // microseconds
  EXPECT_DOUBLE_EQ(first["dur"].get_double().value(), 2000.001);
  EXPECT_EQ(first["args"]["batch_size"].get_int64().value(), 4);
  simdjson::dom::element end = events.at(5);
  EXPECT_EQ(std::string(end["ph"].get_string().value()), "e");
  EXPECT_EQ(end["id"].get_int64().value(), 42);
  EXPECT_DOUBLE_EQ(end["ts"].get_double().value(), 5.0);
}

TEST(TimelineRecorderTest, StopsAtTheEventCapAndSaysSo) {
  TimelineRecorder timeline(/*max_events=*/2);
  IterationRecord iteration;
  for (int i = 0; i < 5; ++i) {
    iteration.start_ns = i * 1000;
    iteration.duration_ns = 1000;
    timeline.OnIteration(iteration);
  }
  timeline.OnRunEnd(5000, {nullptr});
  EXPECT_TRUE(timeline.truncated());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(timeline.Json()).get(doc), simdjson::SUCCESS);
  EXPECT_NE(timeline.Json().find("\"truncated\""), std::string::npos);
  EXPECT_EQ(doc["traceEvents"].get_array().value().size(), 2u + 5 + 1);
}

}  // namespace
}  // namespace kvsim
