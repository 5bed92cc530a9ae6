#include "traces/text/request_id_check.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

struct Record {
  uint64_t id;
  int64_t parent;  // -1: none
};

// Lines 1, 2, ... in order.
absl::Status Check(const std::vector<Record>& records, int64_t memory_entries, int64_t* orphans) {
  RequestIdCheck ids(memory_entries);
  for (size_t i = 0; i < records.size(); ++i) ids.Add(static_cast<int64_t>(i) + 1, records[i].id, records[i].parent);
  const absl::Status status = ids.Finish("t.jsonl");
  *orphans = ids.orphans();
  return status;
}

TEST(RequestIdCheckTest, CountsParentsNotDefinedOnAnEarlierOrTheSameLine) {
  // 7's parent 9 comes later (an orphan), 8 names itself (not one), 10's parent 3 never appears (one).
  const std::vector<Record> records = {{5, -1}, {6, 5}, {7, 9}, {8, 8}, {9, 5}, {10, 3}};
  for (int64_t memory : {1, 2, 3, 1000}) {
    int64_t orphans = -1;
    EXPECT_TRUE(Check(records, memory, &orphans).ok()) << memory;
    EXPECT_EQ(orphans, 2) << memory;
  }
}

TEST(RequestIdCheckTest, NamesTheEarliestLineThatRepeatsAnId) {
  struct Case {
    std::vector<Record> records;
    std::string expected;
  } cases[] = {
      {{{7, -1}, {8, -1}, {7, -1}, {8, -1}, {8, -1}}, "t.jsonl:3: request_id: expected an id not used before, got 7 again"},
      // The larger id repeats first: the merge by id meets 1 first but must name line 3.
      {{{9, -1}, {1, -1}, {9, -1}, {1, -1}}, "t.jsonl:3: request_id: expected an id not used before, got 9 again"},
      // A parent reference to an id is not a definition of it.
      {{{4, 2}, {2, -1}, {3, 2}, {2, -1}}, "t.jsonl:4: request_id: expected an id not used before, got 2 again"},
  };
  for (const Case& c : cases) {
    for (int64_t memory : {1, 2, 5, 1000}) {
      int64_t orphans = 0;
      const absl::Status status = Check(c.records, memory, &orphans);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.expected << " memory " << memory;
      EXPECT_EQ(status.message(), c.expected) << "memory " << memory;
    }
  }
}

// Against a set of every id seen so far, on random streams, with spills every few entries; the entries
// held never exceed the bound and the runs are the independent count entries / bound.
TEST(RequestIdCheckTest, AgreesWithASetOfSeenIdsInBoundedMemory) {
  std::mt19937_64 rng(25);
  for (const bool unique : {true, false}) {
    constexpr int kRecords = 20000;
    std::vector<Record> records;
    std::vector<uint64_t> pool(kRecords);
    for (int i = 0; i < kRecords; ++i) pool[i] = static_cast<uint64_t>(i) * 3 + (i % 2 ? uint64_t{1} << 63 : 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    int64_t entries = 0;
    for (int i = 0; i < kRecords; ++i) {
      const uint64_t id = unique ? pool[i] : pool[rng() % kRecords];
      const int64_t parent = rng() % 3 == 0 ? -1 : static_cast<int64_t>(pool[rng() % kRecords] >> 1);
      records.push_back({id, parent});
      entries += parent >= 0 ? 2 : 1;
    }
    // The reference: a set of the ids so far, stopping at the first repeat.
    absl::flat_hash_set<uint64_t> seen;
    int64_t expected_orphans = 0;
    std::string expected_error;
    for (size_t i = 0; i < records.size(); ++i) {
      if (!seen.insert(records[i].id).second) {
        expected_error = absl::StrCat("t.jsonl:", i + 1, ": request_id: expected an id not used before, got ",
                                      records[i].id, " again");
        break;
      }
      if (records[i].parent >= 0 && !seen.contains(static_cast<uint64_t>(records[i].parent))) ++expected_orphans;
    }
    ASSERT_EQ(expected_error.empty(), unique);
    for (int64_t memory : std::vector<int64_t>{1, 7, 1000, RequestIdCheck::kDefaultMemoryEntries}) {
      RequestIdCheck ids(memory);
      int64_t most_held = 0;
      for (size_t i = 0; i < records.size(); ++i) {
        ids.Add(static_cast<int64_t>(i) + 1, records[i].id, records[i].parent);
        most_held = std::max(most_held, ids.held_entries());
      }
      EXPECT_LE(most_held, memory);
      EXPECT_EQ(ids.spilled_runs(), entries / memory) << memory;
      const absl::Status status = ids.Finish("t.jsonl");
      if (unique) {
        EXPECT_TRUE(status.ok()) << status;
        EXPECT_EQ(ids.orphans(), expected_orphans) << memory;
      } else {
        EXPECT_EQ(status.message(), expected_error) << memory;
      }
    }
  }
}

}  // namespace
}  // namespace kvsim
