#include "traces/request.h"

#include <set>

#include "gtest/gtest.h"
#include "util/mix64.h"

namespace kvsim {
namespace {

TEST(RequestTest, NumBlocksRoundsUp) {
  EXPECT_EQ(NumBlocks(0, 512), 0);
  EXPECT_EQ(NumBlocks(1, 512), 1);
  EXPECT_EQ(NumBlocks(512, 512), 1);
  EXPECT_EQ(NumBlocks(513, 512), 2);
  EXPECT_EQ(NumBlocks(40160, 512), 79);  // first Mooncake record: 79 hash ids
}

TEST(RequestTest, FreshBlocksAreDistinctAcrossRequestsAndDeterministic) {
  std::set<uint64_t> seen;
  for (uint64_t id = 0; id < 200; ++id) {
    Request r;
    r.request_id = id;
    r.input_tokens = 100;
    AssignFreshBlockHashes(16, &r);
    ASSERT_EQ(r.block_hashes.size(), 7u);  // ceil(100 / 16)
    EXPECT_EQ(r.block_tokens, 16);
    for (uint64_t h : r.block_hashes) {
      EXPECT_TRUE(seen.insert(h).second) << "duplicate fresh id for request " << id;
      EXPECT_GE(h, uint64_t{1} << 63);  // never a trace's small sequential id
    }
    Request again = r;
    AssignFreshBlockHashes(16, &again);
    EXPECT_EQ(again.block_hashes, r.block_hashes);
  }
}

TEST(RequestTest, FreshBlocksAreTheMixOfTheRequestIdAndBlockIndex) {
  // The documented ids, for every length from 1 to 40 blocks and request ids up to the top of the range.
  for (uint64_t id : {uint64_t{0}, uint64_t{123456789}, ~uint64_t{0} - 3}) {
    for (int64_t blocks = 1; blocks <= 40; ++blocks) {
      Request r;
      r.request_id = id;
      r.input_tokens = blocks * 16 - 5;
      AssignFreshBlockHashes(16, &r);
      ASSERT_EQ(static_cast<int64_t>(r.block_hashes.size()), blocks);
      for (int64_t k = 0; k < blocks; ++k) {
        ASSERT_EQ(r.block_hashes[k], Mix64(Mix64(id) ^ static_cast<uint64_t>(k)) | (uint64_t{1} << 63))
            << "request " << id << ", block " << k << " of " << blocks;
      }
    }
  }
}

TEST(RequestTest, FreshHashesIfNoneAssignsOnlyARequestWithoutHashes) {
  Request none;
  none.request_id = 9;
  none.input_tokens = 40;
  Request expected = none;
  AssignFreshBlockHashes(16, &expected);
  AssignFreshHashesIfNone(16, &none);
  EXPECT_EQ(none.block_hashes, expected.block_hashes);
  EXPECT_EQ(none.block_tokens, 16);

  Request traced;
  traced.request_id = 9;
  traced.input_tokens = 40;
  traced.block_tokens = 32;
  traced.block_hashes = {5, 6};
  AssignFreshHashesIfNone(16, &traced);
  EXPECT_EQ(traced.block_hashes, (std::vector<uint64_t>{5, 6}));
  EXPECT_EQ(traced.block_tokens, 32);
}

TEST(RequestTest, PromptBlocksCountsHashesOrTheFreshIdsARequestWouldGet) {
  Request traced;
  traced.input_tokens = 40;
  traced.block_tokens = 32;
  traced.block_hashes = {5, 6};
  EXPECT_EQ(PromptBlocks(traced, 16), 2);  // its hashes, whatever the block size asked for
  for (int64_t tokens : {1, 15, 16, 17, 40, 1000}) {
    Request none;
    none.input_tokens = tokens;
    Request fresh = none;
    AssignFreshBlockHashes(16, &fresh);
    EXPECT_EQ(PromptBlocks(none, 16), static_cast<int64_t>(fresh.block_hashes.size())) << tokens << " tokens";
    EXPECT_EQ(PromptBlocks(fresh, 16), static_cast<int64_t>(fresh.block_hashes.size())) << tokens << " tokens";
  }
}

TEST(RequestTest, ProtoRoundTripKeepsEveryField) {
  Request r;
  r.request_id = 42;
  r.arrival_ns = 1'500'000'000;
  r.session_id = 7;
  r.parent_id = 41;
  r.turn = 3;
  r.input_tokens = 1000;
  r.output_tokens = 20;
  r.block_tokens = 16;
  r.block_hashes = {5, 9, 11};
  r.type = proto::REQUEST_TYPE_SEARCH;
  r.failed = true;
  r.model = "ChatGPT";
  r.tool_calls = {{"bash", 2'000'000}, {"", 0}};
  proto::TraceRecord record;
  RequestToProto(r, &record);
  Request back;
  back.block_hashes = {99};  // stale content must be replaced
  RequestFromProto(record, 16, &back);
  EXPECT_EQ(back.request_id, 42u);
  EXPECT_EQ(back.arrival_ns, 1'500'000'000);
  EXPECT_EQ(back.session_id, 7);
  EXPECT_EQ(back.parent_id, 41);
  EXPECT_EQ(back.turn, 3);
  EXPECT_EQ(back.input_tokens, 1000);
  EXPECT_EQ(back.output_tokens, 20);
  EXPECT_EQ(back.block_tokens, 16);
  EXPECT_EQ(back.block_hashes, (std::vector<uint64_t>{5, 9, 11}));
  EXPECT_EQ(back.type, proto::REQUEST_TYPE_SEARCH);
  EXPECT_TRUE(back.failed);
  EXPECT_EQ(back.model, "ChatGPT");
  ASSERT_EQ(back.tool_calls.size(), 2u);
  EXPECT_EQ(back.tool_calls[0].name, "bash");
  EXPECT_EQ(back.tool_calls[0].duration_ns, 2'000'000);

  Request root;  // no session, no parent: stays unset through the proto
  RequestToProto(root, &record);
  EXPECT_FALSE(record.has_session_id());
  RequestFromProto(record, 0, &back);
  EXPECT_EQ(back.session_id, -1);
  EXPECT_EQ(back.parent_id, -1);
}

TEST(RequestTest, BlockTokensUniformAndVariable) {
  Request r;
  r.input_tokens = 40;
  r.block_tokens = 16;
  r.block_hashes = {1, 2, 3};
  EXPECT_EQ(BlockTokensAt(r, 0), 16);
  EXPECT_EQ(BlockTokensAt(r, 2), 8);  // 40 - 2 x 16
  EXPECT_EQ(BlockStartTokens(r, 2), 32);
  EXPECT_EQ(BlockStartTokens(r, 3), 40);  // capped at the prompt
  EXPECT_TRUE(CheckBlockTokenCounts(r).ok());

  r.block_token_counts = {10, 25, 5};
  EXPECT_EQ(BlockTokensAt(r, 1), 25);
  EXPECT_EQ(BlockStartTokens(r, 0), 0);
  EXPECT_EQ(BlockStartTokens(r, 2), 35);
  EXPECT_EQ(BlockStartTokens(r, 3), 40);
  EXPECT_TRUE(CheckBlockTokenCounts(r).ok());
  r.block_token_counts = {10, 25, 6};
  EXPECT_NE(CheckBlockTokenCounts(r).message().find("sum 41"), std::string::npos);
  r.block_token_counts = {10, 30, 0};
  EXPECT_NE(CheckBlockTokenCounts(r).message().find("block_token_counts[2]"), std::string::npos);
  r.block_token_counts = {40};
  EXPECT_FALSE(CheckBlockTokenCounts(r).ok());

  r.block_token_counts = {10, 25, 5};
  proto::TraceRecord record;
  RequestToProto(r, &record);
  Request back;
  RequestFromProto(record, 16, &back);
  EXPECT_EQ(back.block_token_counts, r.block_token_counts);
  back.Clear();
  EXPECT_TRUE(back.block_token_counts.empty());
}

TEST(RequestTest, LimitsRefuseWhatWouldAllocateGigabytes) {
  Request r;
  r.request_id = 7;
  r.input_tokens = kMaxRequestTokens;  // 2^24 tokens: allowed (2^20 blocks of 16)
  r.output_tokens = 1;
  EXPECT_TRUE(CheckRequestLimits(r, 16).ok());
  r.input_tokens = int64_t{1} << 31;  // 2^27 blocks of 16 tokens
  absl::Status s = CheckRequestLimits(r, 16);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "request 7: input_tokens 2147483648 exceeds the limit of 16777216 tokens per request (it would "
            "allocate 134217728 blocks of 16 tokens)");
  r.input_tokens = 100;
  r.output_tokens = int64_t{1} << 40;
  EXPECT_FALSE(CheckRequestLimits(r, 16).ok());
  r.output_tokens = -1;
  EXPECT_FALSE(CheckRequestLimits(r, 16).ok());
  // At one token per block, 2^24 tokens are 2^24 blocks (allowed); hashes beyond the limit are not.
  r.output_tokens = 0;
  r.input_tokens = kMaxRequestTokens;
  EXPECT_TRUE(CheckRequestLimits(r, 1).ok());
  r.block_hashes.assign(kMaxRequestBlocks + 1, 3);
  EXPECT_NE(CheckRequestLimits(r, 1).message().find("16777217 blocks exceed the limit"), std::string::npos);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(RequestBytesTest, EveryFieldRoundTripsAndACutRecordIsRefused) {
  Request a;
  a.request_id = 1ULL << 63;
  a.arrival_ns = -5;
  a.session_id = 7;
  a.parent_id = 3;
  a.turn = 2;
  a.input_tokens = 40;
  a.output_tokens = 9;
  a.block_tokens = 16;
  a.block_hashes = {11, ~uint64_t{0}, 0};
  a.block_token_counts = {16, 16, 8};
  a.type = proto::REQUEST_TYPE_FILE;
  a.failed = true;
  a.model = std::string("m\0del", 5);
  a.tool_calls = {{"search", 100}, {"", 0}};
  Request b;
  b.model = "x";
  b.block_hashes = {1};
  std::string bytes;
  AppendRequestBytes(a, &bytes);
  AppendRequestBytes(b, &bytes);  // two records back to back
  size_t pos = 0;
  Request got;
  ASSERT_TRUE(ReadRequestBytes(bytes, &pos, &got));
  EXPECT_EQ(got.request_id, a.request_id);
  EXPECT_EQ(got.arrival_ns, a.arrival_ns);
  EXPECT_EQ(got.session_id, a.session_id);
  EXPECT_EQ(got.parent_id, a.parent_id);
  EXPECT_EQ(got.turn, a.turn);
  EXPECT_EQ(got.input_tokens, a.input_tokens);
  EXPECT_EQ(got.output_tokens, a.output_tokens);
  EXPECT_EQ(got.block_tokens, a.block_tokens);
  EXPECT_EQ(got.block_hashes, a.block_hashes);
  EXPECT_EQ(got.block_token_counts, a.block_token_counts);
  EXPECT_EQ(got.type, a.type);
  EXPECT_EQ(got.failed, a.failed);
  EXPECT_EQ(got.model, a.model);
  ASSERT_EQ(got.tool_calls.size(), 2u);
  EXPECT_EQ(got.tool_calls[0].name, "search");
  EXPECT_EQ(got.tool_calls[0].duration_ns, 100);
  ASSERT_TRUE(ReadRequestBytes(bytes, &pos, &got));
  EXPECT_EQ(got.model, "x");
  EXPECT_TRUE(got.tool_calls.empty());
  EXPECT_EQ(pos, bytes.size());
  // Every proper prefix of a record is refused.
  std::string one;
  AppendRequestBytes(a, &one);
  for (size_t n = 0; n < one.size(); ++n) {
    size_t at = 0;
    EXPECT_FALSE(ReadRequestBytes(absl::string_view(one.data(), n), &at, &got)) << n;
  }
}

}  // namespace
}  // namespace kvsim
