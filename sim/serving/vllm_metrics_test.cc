#include "sim/serving/vllm_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/percentile.h"

namespace kvsim {
namespace {

// The reference: every value in a vector, sorted, as numpy computes mean, median, std and percentiles.
void ReferenceMetric(const std::string& name, std::vector<double> values, const std::vector<double>& percentiles,
                     Json* out) {
  std::sort(values.begin(), values.end());
  const bool empty = values.empty();
  double mean = 0, var = 0;
  for (double v : values) mean += v;
  if (!empty) mean /= static_cast<double>(values.size());
  for (double v : values) var += (v - mean) * (v - mean);
  if (!empty) var /= static_cast<double>(values.size());
  (*out)["mean_" + name + "_ms"] = empty ? Json(nullptr) : Json(mean);
  (*out)["median_" + name + "_ms"] = empty ? Json(nullptr) : Json(LinearPercentile(values, 0.5));
  (*out)["std_" + name + "_ms"] = empty ? Json(nullptr) : Json(std::sqrt(var));
  for (double p : percentiles) {
    const std::string word = p == std::floor(p) ? std::to_string(static_cast<int64_t>(p)) : "99.9";
    (*out)["p" + word + "_" + name + "_ms"] = empty ? Json(nullptr) : Json(LinearPercentile(values, p / 100));
  }
}

// The reference JSON: every request sorted by (arrival, id), the first `warmup_requests` and those within
// warmup_s of the first arrival left out (no SLO set).
Json Reference(const std::vector<proto::RequestResult>& requests, const VllmMetricsOptions& options) {
  std::vector<proto::RequestResult> sorted = requests;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.arrival_ns() != b.arrival_ns() ? a.arrival_ns() < b.arrival_ns() : a.request_id() < b.request_id();
  });
  std::vector<double> ttft, tpot, itl, e2el;
  int64_t completed = 0, excluded = 0, input = 0, output = 0, start = INT64_MAX, end = INT64_MIN;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const proto::RequestResult& r = sorted[i];
    if (static_cast<int64_t>(i) < options.warmup_requests ||
        r.arrival_ns() - sorted[0].arrival_ns() < static_cast<int64_t>(std::llround(options.warmup_s * 1e9))) {
      ++excluded;
      continue;
    }
    if (!r.finished()) continue;
    ++completed;
    input += r.input_tokens();
    output += r.output_tokens();
    start = std::min(start, r.arrival_ns());
    end = std::max(end, r.arrival_ns() + r.e2e_ns());
    ttft.push_back(r.ttft_ns() / 1e6);
    e2el.push_back(r.e2e_ns() / 1e6);
    if (r.output_tokens() > 1) {
      tpot.push_back((r.e2e_ns() / 1e6 - r.ttft_ns() / 1e6) / static_cast<double>(r.output_tokens() - 1));
      for (int64_t gap : r.token_gaps_ns()) itl.push_back(gap / 1e6);
    }
  }
  const double duration_s = completed > 0 ? (end - start) / 1e9 : 0;
  Json out = Json::object();
  out["backend"] = "kvsim";
  out["duration"] = duration_s;
  out["completed"] = completed;
  out["warmup_excluded"] = excluded;
  out["total_input_tokens"] = input;
  out["total_output_tokens"] = output;
  out["request_throughput"] = Json(completed / duration_s);
  out["request_goodput"] = Json(nullptr);
  out["input_throughput"] = Json(input / duration_s);
  out["output_throughput"] = Json(output / duration_s);
  out["total_token_throughput"] = Json((input + output) / duration_s);
  ReferenceMetric("ttft", ttft, options.percentiles, &out);
  ReferenceMetric("tpot", tpot, options.percentiles, &out);
  ReferenceMetric("itl", itl, options.percentiles, &out);
  ReferenceMetric("e2el", e2el, options.percentiles, &out);
  return out;
}

// `n` requests arriving in bursts (many share an arrival time, ids not in arrival order), some rejected,
// each finished one with its token gaps.
std::vector<proto::RequestResult> RandomRequests(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<proto::RequestResult> requests;
  int64_t arrival_ns = 1000;
  std::vector<uint64_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = static_cast<uint64_t>(i) * 7 + 3;
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int i = 0; i < n; ++i) {
    if (rng() % 3 == 0) arrival_ns += static_cast<int64_t>(rng() % 50'000'000);
    proto::RequestResult r;
    r.set_request_id(ids[i]);
    r.set_arrival_ns(arrival_ns);
    r.set_input_tokens(1 + static_cast<int64_t>(rng() % 500));
    r.set_finished(rng() % 10 != 0);
    if (r.finished()) {
      const int64_t out = 1 + static_cast<int64_t>(rng() % 6);
      r.set_output_tokens(out);
      const int64_t ttft = 1 + static_cast<int64_t>(rng() % 90'000'000);
      int64_t e2e = ttft;
      for (int64_t k = 1; k < out; ++k) {
        const int64_t gap = 1 + static_cast<int64_t>(rng() % 30'000'000);
        r.add_token_gaps_ns(gap);
        e2e += gap;
      }
      r.set_ttft_ns(ttft);
      r.set_e2e_ns(e2e);
    }
    requests.push_back(r);
  }
  return requests;
}

// Feeds `requests` as a run would: arrivals in time order, each request's outcome some arrivals after its
// own (completion order, not arrival order); values spilled every 3.
Json Streamed(const std::vector<proto::RequestResult>& requests, const VllmMetricsOptions& options, uint64_t seed) {
  auto collector = VllmMetricsCollector::Create({}, options, /*memory_values=*/3);
  EXPECT_TRUE(collector.ok()) << collector.status();
  std::mt19937_64 rng(seed);
  std::vector<const proto::RequestResult*> in_flight;
  for (const proto::RequestResult& r : requests) {
    (*collector)->AddArrival(r.arrival_ns(), r.request_id());
    in_flight.push_back(&r);
    while (!in_flight.empty() && rng() % 2 == 0) {
      const size_t pick = rng() % in_flight.size();
      (*collector)->AddRequest(*in_flight[pick]);
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  for (const proto::RequestResult* r : in_flight) (*collector)->AddRequest(*r);
  absl::StatusOr<Json> json = (*collector)->Finish();
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? *json : Json();
}

TEST(VllmMetricsCollectorTest, StreamedInCompletionOrderEqualsSortedReference) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE(seed);
    const std::vector<proto::RequestResult> requests = RandomRequests(seed, 400);
    for (int64_t warmup_requests : {0, 1, 37, 399, 400, 1000}) {
      for (double warmup_s : {0.0, 0.2}) {
        SCOPED_TRACE(warmup_requests);
        SCOPED_TRACE(warmup_s);
        VllmMetricsOptions options;
        options.percentiles = {50, 90, 99, 99.9, 100};
        options.warmup_requests = warmup_requests;
        options.warmup_s = warmup_s;
        const Json expected = Reference(requests, options);
        EXPECT_EQ(Streamed(requests, options, seed).dump(), expected.dump());
        proto::Results results;
        for (const proto::RequestResult& r : requests) *results.add_requests() = r;
        absl::StatusOr<Json> in_memory = VllmBenchmarkJson(results, {}, options);
        ASSERT_TRUE(in_memory.ok()) << in_memory.status();
        EXPECT_EQ(in_memory->dump(), expected.dump());
      }
    }
  }
}

TEST(VllmMetricsCollectorTest, WarmUpCountsTiesByRequestId) {
  // Three requests at one time, ids 9, 4, 6 in arrival order: the first two by (arrival, id) are 4 and 6.
  VllmMetricsOptions options;
  options.warmup_requests = 2;
  auto collector = VllmMetricsCollector::Create({}, options);
  ASSERT_TRUE(collector.ok());
  for (uint64_t id : {9, 4, 6}) (*collector)->AddArrival(100, id);
  for (uint64_t id : {4, 9, 6}) {
    proto::RequestResult r;
    r.set_request_id(id);
    r.set_arrival_ns(100);
    r.set_finished(true);
    r.set_output_tokens(1);
    r.set_input_tokens(static_cast<int64_t>(id));
    r.set_ttft_ns(static_cast<int64_t>(id) * 1'000'000);
    r.set_e2e_ns(static_cast<int64_t>(id) * 1'000'000);
    (*collector)->AddRequest(r);
  }
  absl::StatusOr<Json> json = (*collector)->Finish();
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)["completed"], 1);
  EXPECT_EQ((*json)["warmup_excluded"], 2);
  EXPECT_EQ((*json)["total_input_tokens"], 9);
  EXPECT_EQ((*json)["mean_ttft_ms"], 9.0);
}

TEST(VllmMetricsCollectorTest, RefusesBadOptions) {
  VllmMetricsOptions options;
  options.percentiles = {0};
  EXPECT_EQ(VllmMetricsCollector::Create({}, options).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(VllmMetricsCollector::Create({}, {}, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim
