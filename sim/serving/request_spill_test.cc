#include "sim/serving/request_spill.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// A request with every field set from `seed` (hash and tool-call counts vary, some empty).
Request MakeRequest(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Request r;
  r.request_id = rng();
  r.arrival_ns = static_cast<int64_t>(rng() % 1'000'000'000'000);
  r.session_id = static_cast<int64_t>(rng() % 100) - 1;
  r.parent_id = static_cast<int64_t>(rng() % 1000) - 1;
  r.turn = static_cast<int32_t>(rng() % 9);
  r.input_tokens = 1 + static_cast<int64_t>(rng() % 40000);
  r.output_tokens = static_cast<int64_t>(rng() % 900);
  r.block_tokens = 16;
  for (uint64_t k = rng() % 300; k > 0; --k) r.block_hashes.push_back(rng());
  if (rng() % 2) {
    for (size_t k = 0; k < r.block_hashes.size(); ++k) r.block_token_counts.push_back(static_cast<int32_t>(rng() % 64));
  }
  r.type = static_cast<proto::RequestType>(rng() % 3);
  r.failed = rng() % 2;
  r.model = rng() % 2 ? "" : std::string(rng() % 40, 'm');
  for (uint64_t k = rng() % 4; k > 0; --k) r.tool_calls.push_back({std::string(rng() % 12, 't'), static_cast<int64_t>(rng() % 99999)});
  return r;
}

void ExpectSame(const Request& a, const Request& b) {
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.arrival_ns, b.arrival_ns);
  EXPECT_EQ(a.session_id, b.session_id);
  EXPECT_EQ(a.parent_id, b.parent_id);
  EXPECT_EQ(a.turn, b.turn);
  EXPECT_EQ(a.input_tokens, b.input_tokens);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.block_tokens, b.block_tokens);
  EXPECT_EQ(a.block_hashes, b.block_hashes);
  EXPECT_EQ(a.block_token_counts, b.block_token_counts);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.model, b.model);
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size());
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name);
    EXPECT_EQ(a.tool_calls[i].duration_ns, b.tool_calls[i].duration_ns);
  }
}

TEST(RequestSpillTest, ReadsBackEveryRecordInAnyOrder) {
  RequestSpill spill;
  std::vector<int64_t> offsets;
  const int n = 3000;  // several MiB: past the write buffer
  for (int i = 0; i < n; ++i) {
    RequestKv kv;
    kv.config = i % 5;
    kv.block_factor = 1 + i % 3;
    kv.hash_salt = static_cast<uint64_t>(i) * 977;
    kv.prompt_keep_tokens = i % 2 ? -1 : i;
    offsets.push_back(spill.Append(MakeRequest(i), i % 3 == 0, kv));
  }
  EXPECT_GT(spill.size(), int64_t{1} << 20);
  Request read;  // reused: each Read overwrites every field
  std::mt19937_64 rng(5);
  for (int round = 0; round < 2 * n; ++round) {
    const int i = static_cast<int>(rng() % n);
    SCOPED_TRACE(i);
    bool unique = false;
    RequestKv kv;
    ASSERT_TRUE(spill.Read(offsets[i], &read, &unique, &kv).ok());
    ExpectSame(read, MakeRequest(i));
    EXPECT_EQ(unique, i % 3 == 0);
    EXPECT_EQ(kv.config, i % 5);
    EXPECT_EQ(kv.block_factor, 1 + i % 3);
    EXPECT_EQ(kv.hash_salt, static_cast<uint64_t>(i) * 977);
    EXPECT_EQ(kv.prompt_keep_tokens, i % 2 ? -1 : i);
    // Appending after reads keeps the earlier records readable.
    if (round == n) offsets.push_back(spill.Append(MakeRequest(n), false, RequestKv()));
  }
  bool unique = true;
  RequestKv kv;
  ASSERT_TRUE(spill.Read(offsets[n], &read, &unique, &kv).ok());
  ExpectSame(read, MakeRequest(n));
  EXPECT_FALSE(unique);
}

TEST(RequestSpillTest, RefusesAnOffsetPastTheEnd) {
  RequestSpill spill;
  Request read;
  bool unique;
  RequestKv kv;
  EXPECT_EQ(spill.Read(0, &read, &unique, &kv).code(), absl::StatusCode::kInvalidArgument);
  spill.Append(MakeRequest(1), false, kv);
  EXPECT_EQ(spill.Read(spill.size(), &read, &unique, &kv).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim
