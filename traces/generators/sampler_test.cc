#include "traces/generators/sampler.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

constexpr double kZ = 5;  // tolerances are 5 standard errors (see portable_random_test.cc)

proto::ValueDistribution Parse(const std::string& text) {
  proto::ValueDistribution d;
  const absl::Status status = ParseTextProto(text, "test", &d);
  EXPECT_TRUE(status.ok()) << status;
  return d;
}

Sampler MakeTokens(const std::string& text, const TraceOpener& open = nullptr) {
  absl::StatusOr<Sampler> s = Sampler::Create(Parse(text), "x", SampleUnit::kTokens, open);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

Sampler MakeSeconds(const std::string& text) {
  absl::StatusOr<Sampler> s = Sampler::Create(Parse(text), "x", SampleUnit::kSeconds, nullptr);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

absl::Status CreateError(const std::string& text, SampleUnit unit = SampleUnit::kTokens,
                         const TraceOpener& open = nullptr) {
  absl::StatusOr<Sampler> s = Sampler::Create(Parse(text), "classes[0].chat.input_tokens", unit, open);
  return s.status();
}

TraceOpener VectorOpener(std::vector<Request> requests) {
  return [requests](const std::string& path) -> absl::StatusOr<std::unique_ptr<TraceReader>> {
    if (path != "lengths.jsonl") return absl::NotFoundError(path + ": no such file");
    return std::unique_ptr<TraceReader>(new VectorTraceReader(requests, TraceInfo{path, "test", 0}));
  };
}

TEST(SamplerTest, FixedRoundsHalfAwayFromZeroForTokens) {
  Rng rng(1);
  EXPECT_EQ(MakeTokens("fixed { value: 2.5 }").SampleTokens(rng), 3);
  EXPECT_EQ(MakeTokens("fixed { value: 2.49 }").SampleTokens(rng), 2);
  EXPECT_DOUBLE_EQ(MakeSeconds("fixed { value: 2.5 }").SampleSeconds(rng), 2.5);
}

TEST(SamplerTest, UniformTokensCoverEveryIntegerEqually) {
  Sampler s = MakeTokens("uniform { min: 2.5 max: 5 }");  // integers 3, 4, 5
  Rng rng(2);
  const int n = 300000;
  std::map<int64_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[s.SampleTokens(rng)];
  ASSERT_EQ(counts.size(), 3u);
  for (int64_t v : {3, 4, 5}) EXPECT_NEAR(counts[v], n / 3.0, kZ * std::sqrt(n * 2.0 / 9)) << v;
}

TEST(SamplerTest, UniformSecondsMean) {
  Sampler s = MakeSeconds("uniform { min: 1 max: 3 }");
  Rng rng(3);
  const int n = 200000;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = s.SampleSeconds(rng);
    ASSERT_GE(x, 1);
    ASSERT_LT(x, 3);
    sum += x;
  }
  // Uniform(1, 3): mean 2, sd 2/sqrt(12).
  EXPECT_NEAR(sum / n, 2.0, kZ * (2 / std::sqrt(12.0)) / std::sqrt(n));
}

// LogNormal(median m, sigma s): P(X < m) = 1/2 and E[X] = m exp(s^2/2).
TEST(SamplerTest, LogNormalMedianAndMean) {
  Sampler s = MakeSeconds("lognormal { median: 100 sigma: 0.5 }");
  Rng rng(4);
  const int n = 400000;
  int below = 0;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = s.SampleSeconds(rng);
    below += x < 100;
    sum += x;
  }
  EXPECT_NEAR(below, n / 2.0, kZ * std::sqrt(n / 4.0));
  const double mean = 100 * std::exp(0.125);
  const double sd = mean * std::sqrt(std::exp(0.25) - 1);  // Var = mean^2 (e^{s^2} - 1)
  EXPECT_NEAR(sum / n, mean, kZ * sd / std::sqrt(n));
}

TEST(SamplerTest, GammaMeanAndExponentialMean) {
  Rng rng(5);
  const int n = 300000;
  Sampler g = MakeSeconds("gamma { mean: 4 cv: 2 }");
  Sampler e = MakeSeconds("exponential { mean: 4 }");
  double gsum = 0, esum = 0;
  for (int i = 0; i < n; ++i) gsum += g.SampleSeconds(rng), esum += e.SampleSeconds(rng);
  EXPECT_NEAR(gsum / n, 4.0, kZ * 8 / std::sqrt(n));  // sd = cv * mean = 8
  EXPECT_NEAR(esum / n, 4.0, kZ * 4 / std::sqrt(n));
}

// Zipf over [min, max] with P(min + j) proportional to (j + 1)^-a: for [10, 13] and a = 1 the weights are
// 1, 1/2, 1/3, 1/4, summing to 25/12, so P(10) = 12/25 and P(13) = 3/25.
TEST(SamplerTest, ZipfTokensOffsetByMin) {
  Sampler s = MakeTokens("zipf { min: 10 max: 13 exponent: 1 }");
  Rng rng(6);
  const int n = 300000;
  std::map<int64_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[s.SampleTokens(rng)];
  ASSERT_EQ(counts.size(), 4u);
  EXPECT_EQ(counts.begin()->first, 10);
  EXPECT_EQ(counts.rbegin()->first, 13);
  const double p10 = 12.0 / 25, p13 = 3.0 / 25;
  EXPECT_NEAR(counts[10], n * p10, kZ * std::sqrt(n * p10 * (1 - p10)));
  EXPECT_NEAR(counts[13], n * p13, kZ * std::sqrt(n * p13 * (1 - p13)));
}

TEST(SamplerTest, ClampsToMinAndMaxValue) {
  Sampler s = MakeTokens("exponential { mean: 100 } min_value: 20.2 max_value: 150.9");
  Rng rng(7);
  int at_min = 0, at_max = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const int64_t v = s.SampleTokens(rng);
    ASSERT_GE(v, 21);   // ceil(20.2)
    ASSERT_LE(v, 150);  // floor(150.9)
    at_min += v == 21, at_max += v == 150;
  }
  // P(X rounds to <= 21) = 1 - e^{-0.215} = 0.193; P(X rounds to >= 150) = e^{-1.495} = 0.224.
  EXPECT_NEAR(at_min, n * 0.1935, kZ * std::sqrt(n * 0.1935 * 0.8065));
  EXPECT_NEAR(at_max, n * 0.2242, kZ * std::sqrt(n * 0.2242 * 0.7758));
}

TEST(SamplerTest, ResampleDrawsTheTraceFieldUniformly) {
  std::vector<Request> requests(4);
  const int64_t inputs[] = {10, 20, 20, 70};
  for (int i = 0; i < 4; ++i) requests[i].input_tokens = inputs[i], requests[i].output_tokens = 100 + i;
  Sampler in =
      MakeTokens(R"(resample { trace_path: "lengths.jsonl" field: FIELD_INPUT_TOKENS })", VectorOpener(requests));
  Sampler out =
      MakeTokens(R"(resample { trace_path: "lengths.jsonl" field: FIELD_OUTPUT_TOKENS })", VectorOpener(requests));
  Rng rng(8);
  const int n = 200000;
  std::map<int64_t, int> counts;
  for (int i = 0; i < n; ++i) {
    ++counts[in.SampleTokens(rng)];
    const int64_t o = out.SampleTokens(rng);
    ASSERT_TRUE(o >= 100 && o <= 103) << o;
  }
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_NEAR(counts[20], n / 2.0, kZ * std::sqrt(n / 4.0));  // two of four records
  EXPECT_NEAR(counts[70], n / 4.0, kZ * std::sqrt(n * 3.0 / 16));
}

TEST(SamplerTest, OptionalUnsetIsZero) {
  absl::StatusOr<Sampler> s =
      Sampler::CreateOptional(false, proto::ValueDistribution(), "x", SampleUnit::kSeconds, nullptr);
  ASSERT_TRUE(s.ok());
  Rng rng(9);
  EXPECT_EQ(s->SampleSeconds(rng), 0.0);
}

void ExpectInvalid(const absl::Status& status, const std::string& field) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(field), std::string::npos) << status.message();
}

TEST(SamplerTest, InvalidSpecsNameTheField) {
  const std::string f = "classes[0].chat.input_tokens";
  ExpectInvalid(CreateError(""), f + ": no distribution set");
  ExpectInvalid(CreateError("lognormal { median: 10 sigma: 0 }"), f + ".lognormal.sigma");
  ExpectInvalid(CreateError("lognormal { median: -1 sigma: 1 }"), f + ".lognormal.median");
  ExpectInvalid(CreateError("gamma { mean: 1 cv: nan }"), f + ".gamma.cv");
  ExpectInvalid(CreateError("exponential { mean: 0 }"), f + ".exponential.mean");
  ExpectInvalid(CreateError("fixed { value: -3 }"), f + ".fixed.value");
  // Sizes a request's blocks could not be held at (1e308 tokens hung the generator).
  ExpectInvalid(CreateError("fixed { value: 1e308 }"), f + ".fixed.value: must be at most 16777216 tokens");
  ExpectInvalid(CreateError("lognormal { median: 100 sigma: 50 }"), f + ".lognormal.sigma: must be at most 10");
  ExpectInvalid(CreateError("uniform { min: 5 max: 4 }"), f + ".uniform.max");
  ExpectInvalid(CreateError("uniform { min: 4.2 max: 4.8 }"), f + ".uniform.max");  // no integer inside
  ExpectInvalid(CreateError("zipf { min: 0 max: 10000000 exponent: 1 }"), f + ".zipf.max");
  ExpectInvalid(CreateError("zipf { min: -1 max: 10 exponent: 1 }"), f + ".zipf.min");
  ExpectInvalid(CreateError("fixed { value: 1 } min_value: 10 max_value: 5"), f + ".max_value");
  ExpectInvalid(CreateError(R"(resample { trace_path: "t" field: FIELD_INPUT_TOKENS })", SampleUnit::kSeconds),
                f + ".resample: only token");
  ExpectInvalid(CreateError(R"(resample { trace_path: "t" field: FIELD_INPUT_TOKENS })"),
                f + ".resample.trace_path: traces cannot be opened");
  ExpectInvalid(CreateError(R"(resample { trace_path: "lengths.jsonl" })", SampleUnit::kTokens, VectorOpener({})),
                f + ".resample.field");
  ExpectInvalid(CreateError(R"(resample { trace_path: "lengths.jsonl" field: FIELD_OUTPUT_TOKENS })",
                            SampleUnit::kTokens, VectorOpener({})),
                "has no records");
  // A missing trace keeps the opener's own error.
  absl::Status missing = CreateError(R"(resample { trace_path: "nope" field: FIELD_OUTPUT_TOKENS })",
                                     SampleUnit::kTokens, VectorOpener({}));
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
}

}  // namespace
}  // namespace kvsim
