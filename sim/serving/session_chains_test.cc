#include "sim/serving/session_chains.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// The header's rule, request by request, by scanning the earlier requests (the brute-force reference).
struct Reference {
  std::vector<int32_t> roots;
  std::vector<int32_t> predecessor;
  std::vector<int64_t> think_ns;
};
Reference ReferenceChains(const std::vector<SessionLink>& links) {
  const int32_t n = static_cast<int32_t>(links.size());
  Reference ref;
  ref.predecessor.assign(n, -1);
  ref.think_ns.assign(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    const SessionLink& r = links[i];
    int32_t pred = -1;
    if (r.session_id >= 0 && r.parent_id >= 0) {
      for (int32_t j = 0; j < i; ++j) {
        if (links[j].request_id == static_cast<uint64_t>(r.parent_id) && links[j].session_id == r.session_id) pred = j;
      }
    }
    if (pred < 0 && r.session_id >= 0) {
      for (int32_t j = 0; j < i; ++j) {
        if (links[j].session_id == r.session_id) pred = j;
      }
    }
    if (pred < 0) {
      ref.roots.push_back(i);
      continue;
    }
    ref.predecessor[i] = pred;
    const SessionLink& p = links[pred];
    ref.think_ns[i] = p.tool_ns >= 0 ? p.tool_ns : std::max<int64_t>(0, r.arrival_ns - p.arrival_ns);
  }
  return ref;
}

// Builds, then checks every root, record and successor list against the reference.
void ExpectChainsMatch(const std::vector<SessionLink>& links, const SessionChains::Options& options) {
  SessionChains chains(options);
  for (size_t i = 0; i < links.size(); ++i) chains.Add(links[i], /*spill_offset=*/1000 + 7 * static_cast<int64_t>(i));
  ASSERT_TRUE(chains.Build("t.jsonl").ok());
  const Reference ref = ReferenceChains(links);
  ASSERT_EQ(chains.num_roots(), static_cast<int32_t>(ref.roots.size()));
  for (int32_t k = 0; k < chains.num_roots(); ++k) {
    absl::StatusOr<int32_t> root = chains.root(k);
    ASSERT_TRUE(root.ok());
    EXPECT_EQ(*root, ref.roots[k]) << "root " << k;
  }
  std::vector<int32_t> successors;
  for (int32_t i = 0; i < static_cast<int32_t>(links.size()); ++i) {
    absl::StatusOr<SessionChainRecord> record = chains.Get(i);
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(record->spill_offset, 1000 + 7 * i);
    EXPECT_EQ(record->think_ns, ref.think_ns[i]) << "request " << i;
    ASSERT_TRUE(chains.Successors(i, &successors).ok());
    std::vector<int32_t> expected;
    for (int32_t j = 0; j < static_cast<int32_t>(links.size()); ++j) {
      if (ref.predecessor[j] == i) expected.push_back(j);
    }
    EXPECT_EQ(successors, expected) << "request " << i;
  }
}

SessionLink Link(uint64_t id, int64_t session, int64_t parent, int64_t arrival_ns, int64_t tool_ns = -1) {
  SessionLink link;
  link.request_id = id;
  link.session_id = session;
  link.parent_id = parent;
  link.arrival_ns = arrival_ns;
  link.tool_ns = tool_ns;
  return link;
}

// Hand-computed: session 1 is a chat (turns 10, 11, 12); session 2 an agent whose call 20 has tool calls
// of 300 ns and two parallel successors naming it (21, 22), then 23 naming a parent of another session
// (so it follows 22, its session's previous request); 30 has no session.
TEST(SessionChainsTest, HandComputedChatAndAgent) {
  const std::vector<SessionLink> links = {
      Link(10, 1, -1, 0),       Link(20, 2, -1, 5, 300), Link(11, 1, -1, 100), Link(30, -1, -1, 120),
      Link(21, 2, 20, 130),     Link(22, 2, 20, 140),    Link(12, 1, 10, 90),  Link(23, 2, 10, 500),
  };
  SessionChains chains;
  for (size_t i = 0; i < links.size(); ++i) chains.Add(links[i], static_cast<int64_t>(i));
  ASSERT_TRUE(chains.Build("t.jsonl").ok());
  ASSERT_EQ(chains.num_roots(), 3);  // 10, 20, 30
  EXPECT_EQ(*chains.root(0), 0);
  EXPECT_EQ(*chains.root(1), 1);
  EXPECT_EQ(*chains.root(2), 3);
  std::vector<int32_t> next;
  ASSERT_TRUE(chains.Successors(0, &next).ok());
  EXPECT_EQ(next, (std::vector<int32_t>{2, 6}));  // 11 (previous of session), 12 (parent 10)
  ASSERT_TRUE(chains.Successors(1, &next).ok());
  EXPECT_EQ(next, (std::vector<int32_t>{4, 5}));  // 21, 22 in trace order
  ASSERT_TRUE(chains.Successors(5, &next).ok());
  EXPECT_EQ(next, (std::vector<int32_t>{7}));
  EXPECT_EQ(chains.Get(2)->think_ns, 100);  // 100 - 0
  EXPECT_EQ(chains.Get(6)->think_ns, 90);   // 90 - 0: its parent, not the previous turn
  EXPECT_EQ(chains.Get(4)->think_ns, 300);  // the parent's tool time
  EXPECT_EQ(chains.Get(7)->think_ns, 360);  // 500 - 140
  EXPECT_EQ(chains.Get(3)->think_ns, 0);
}

// Random traces (parents of the same session, of another, later, missing or the request itself), with
// spills of a few records and a cache of one or two small pages, against the reference.
TEST(SessionChainsTest, MatchesTheReferenceWithSpillsAndASmallCache) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 300);
    const int sessions = 1 + static_cast<int>(rng() % 20);
    std::vector<uint64_t> ids(n);
    for (int i = 0; i < n; ++i) ids[i] = static_cast<uint64_t>(i) * 3 + 1;
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<SessionLink> links;
    int64_t arrival_ns = 0;
    for (int i = 0; i < n; ++i) {
      arrival_ns += static_cast<int64_t>(rng() % 50);
      const int64_t session = rng() % 8 == 0 ? -1 : static_cast<int64_t>(rng() % sessions);
      int64_t parent = -1;
      switch (rng() % 4) {
        case 0: parent = static_cast<int64_t>(ids[rng() % n]); break;  // any request, earlier or later
        case 1: parent = i > 0 ? static_cast<int64_t>(ids[rng() % i]) : -1; break;
        case 2: parent = static_cast<int64_t>(ids[i]); break;  // itself
        default: break;
      }
      const int64_t arrival = arrival_ns - static_cast<int64_t>(rng() % 3 == 0 ? rng() % 100 : 0);
      links.push_back(Link(ids[i], session, parent, arrival, rng() % 3 == 0 ? static_cast<int64_t>(rng() % 1000) : -1));
    }
    SessionChains::Options options;
    options.run_records = 1 + static_cast<int64_t>(rng() % 7);
    options.page_records = 1 + static_cast<int64_t>(rng() % 5);
    options.cache_pages = 1 + static_cast<int64_t>(rng() % 2);
    SCOPED_TRACE(testing::Message() << "trial " << trial << " n " << n);
    ExpectChainsMatch(links, options);
    ExpectChainsMatch(links, SessionChains::Options());
  }
}

TEST(SessionChainsTest, EmptyTraceHasNoRoots) {
  SessionChains chains;
  ASSERT_TRUE(chains.Build("t.jsonl").ok());
  EXPECT_EQ(chains.num_roots(), 0);
}

// The first request in trace order that repeats an id is named, whatever the ids' sort order.
TEST(SessionChainsTest, RefusesTheFirstRepeatedId) {
  for (const int64_t run_records : {int64_t{1}, int64_t{2}, int64_t{1} << 18}) {
    SessionChains::Options options;
    options.run_records = run_records;
    SessionChains chains(options);
    const std::vector<uint64_t> ids = {9, 5, 7, 9, 5, 7};
    for (size_t i = 0; i < ids.size(); ++i) chains.Add(Link(ids[i], 1, -1, static_cast<int64_t>(i)), 0);
    const absl::Status status = chains.Build("t.jsonl");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), "t.jsonl: request_id 9 appears twice; closed-loop sessions need unique ids");
  }
}

}  // namespace
}  // namespace kvsim
