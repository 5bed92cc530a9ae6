#include "traces/text/import_reader.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "traces/test_util.h"

namespace kvsim {
namespace {

// A source over (timestamp_ns, input_tokens) pairs; input_tokens tags each record.
class FakeSource final : public RecordSource {
 public:
  explicit FakeSource(std::vector<std::pair<int64_t, int64_t>> records, bool ids = false)
      : records_(std::move(records)), ids_(ids) {}
  bool Next(Request* request) override {
    if (next_ >= records_.size()) return false;
    request->Clear();
    request->arrival_ns = records_[next_].first;
    request->input_tokens = records_[next_].second;
    if (ids_) request->request_id = 1000 + next_;
    ++next_;
    return true;
  }
  absl::Status status() const override { return absl::OkStatus(); }
  bool has_request_ids() const override { return ids_; }
  std::string position() const override { return absl::StrCat("fake:", next_); }

 private:
  std::vector<std::pair<int64_t, int64_t>> records_;
  bool ids_;
  size_t next_ = 0;
};

struct Out {
  uint64_t id;
  int64_t arrival_ns;
  int64_t tag;
  bool operator==(const Out& o) const { return id == o.id && arrival_ns == o.arrival_ns && tag == o.tag; }
};

std::vector<Out> Drain(ImportReader& reader) {
  std::vector<Out> out;
  Request r;
  while (reader.Next(&r)) out.push_back({r.request_id, r.arrival_ns, r.input_tokens});
  return out;
}

TEST(ImportReaderTest, SortsStablyWithinTheWindowAndCountsOutOfOrderRecords) {
  // File order: t = 50, 10, 30, 10, 20 (tags 0..4). Records earlier than their predecessor: 10 (after
  // 50), 10 (after 30) = 2. Sorted stably: 10(tag1), 10(tag3), 20(tag4), 30(tag2), 50(tag0); the origin
  // is 10, so arrivals are 0, 0, 10, 20, 40; ids are the file indices.
  ImportReader reader(std::make_unique<FakeSource>(
                          std::vector<std::pair<int64_t, int64_t>>{{50, 0}, {10, 1}, {30, 2}, {10, 3}, {20, 4}}),
                      {"fake", "fake", 0}, /*reorder_window=*/8);
  EXPECT_EQ(Drain(reader), (std::vector<Out>{{1, 0, 1}, {3, 0, 3}, {4, 10, 4}, {2, 20, 2}, {0, 40, 0}}));
  EXPECT_TRUE(reader.status().ok()) << reader.status();
  EXPECT_EQ(reader.num_out_of_order(), 2);
  ASSERT_EQ(reader.warnings().size(), 1u);
  EXPECT_NE(reader.warnings()[0].find("non-monotonic timestamps re-sorted: 2"), std::string::npos);
}

TEST(ImportReaderTest, SortedInputPassesThroughWithSourceIdsKept) {
  ImportReader reader(
      std::make_unique<FakeSource>(std::vector<std::pair<int64_t, int64_t>>{{-5, 0}, {-5, 1}, {7, 2}}, true),
      {"fake", "fake", 0}, 1);
  // Origin -5: arrivals 0, 0, 12; the source's ids (1000 + index) are kept.
  EXPECT_EQ(Drain(reader), (std::vector<Out>{{1000, 0, 0}, {1001, 0, 1}, {1002, 12, 2}}));
  EXPECT_TRUE(reader.status().ok());
  EXPECT_TRUE(reader.warnings().empty());
}

TEST(ImportReaderTest, DisplacementBeyondTheWindowIsAnErrorNamingTheRecord) {
  // Window 2: reads 30, 40, emits 30; reads 50, emits 40; reads 10 < 40 already emitted -> error at the
  // 4th record.
  ImportReader reader(
      std::make_unique<FakeSource>(std::vector<std::pair<int64_t, int64_t>>{{30, 0}, {40, 1}, {50, 2}, {10, 3}}),
      {"fake", "fake", 0}, 2);
  EXPECT_EQ(Drain(reader).size(), 2u);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("fake:4: timestamp"), absl::string_view::npos) << reader.status();
  EXPECT_NE(reader.status().message().find("2-record reorder window"), absl::string_view::npos);
}

TEST(ImportReaderTest, EmptySourceIsAnError) {
  ImportReader reader(std::make_unique<FakeSource>(std::vector<std::pair<int64_t, int64_t>>{}),
                      {"empty.jsonl", "fake", 0}, 4);
  Request r;
  EXPECT_FALSE(reader.Next(&r));
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("empty.jsonl: expected at least one record"), absl::string_view::npos);
}

TEST(ImportReaderTest, ZeroWindowIsRejected) {
  TraceOptions options;
  options.reorder_window = 0;
  auto reader = MakeImportReader(std::make_unique<FakeSource>(std::vector<std::pair<int64_t, int64_t>>{}),
                                 {"x", "fake", 0}, options);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("reorder window"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
