#include "kernels/reference/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A random problem: pool of `num_pages` pages in random order, random values (never zeros).
struct Problem {
  PagedKvLayout layout;
  SegmentTable table;
  int num_q_heads = 0;
  std::vector<float> q, k, v;
};

std::vector<float> RandomValues(int64_t n, double stddev, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(dist(rng));
  return out;
}

// Requests of `segments_per_request` segments with random token counts in [0, max_tokens] (0 allowed:
// empty segments), pages drawn from a shuffled pool.
Problem RandomProblem(int num_requests, int segments_per_request, int max_tokens, std::mt19937_64& rng) {
  Problem p;
  p.layout.page_size = 4;
  p.layout.num_kv_heads = 2;
  p.layout.head_dim = 8;
  p.num_q_heads = 6;  // GQA ratio 3
  std::uniform_int_distribution<int> tokens(0, max_tokens);
  std::vector<std::vector<SegmentTable::SegmentSpec>> requests(num_requests);
  int pages = 0;
  for (auto& specs : requests) {
    for (int s = 0; s < segments_per_request; ++s) {
      SegmentTable::SegmentSpec spec;
      spec.num_tokens = tokens(rng);
      for (int i = 0; i < (spec.num_tokens + 3) / 4; ++i) spec.pages.push_back(pages++);
      specs.push_back(spec);
    }
  }
  std::vector<int32_t> permutation(pages);
  std::iota(permutation.begin(), permutation.end(), 0);
  std::shuffle(permutation.begin(), permutation.end(), rng);
  for (auto& specs : requests) {
    for (auto& spec : specs) {
      for (int32_t& page : spec.pages) page = permutation[page];
    }
    p.table.AddRequest(specs);
  }
  p.layout.num_pages = pages;
  p.k = RandomValues(p.layout.NumElements(), 1.0, rng);
  p.v = RandomValues(p.layout.NumElements(), 1.0, rng);
  return p;
}

// Brute force: softmax over the list of (row offsets of) all context tokens of request r that query
// position `visible_end` may see, gathered token by token, without segments or merging.
void BruteForce(const Problem& p, int r, const float* q, int h, int64_t visible_end, std::vector<double>* o,
                double* lse) {
  const PagedKvLayout& l = p.layout;
  const int kv_head = h / (p.num_q_heads / l.num_kv_heads);
  std::vector<int64_t> rows;
  for (int s = p.table.segment_begin[r]; s < p.table.segment_begin[r + 1]; ++s) {
    const KvSegment& seg = p.table.segments[s];
    for (int t = 0; t < seg.num_tokens; ++t) {
      const int page = p.table.page_table[seg.page_table_offset + t / l.page_size];
      rows.push_back(((int64_t{page} * l.page_size + t % l.page_size) * l.num_kv_heads + kv_head) * l.head_dim);
    }
  }
  rows.resize(std::min<int64_t>(rows.size(), visible_end));
  o->assign(l.head_dim, 0.0);
  if (rows.empty()) {
    *lse = kNegInf;
    return;
  }
  std::vector<double> e(rows.size());
  double sum = 0;
  for (size_t t = 0; t < rows.size(); ++t) {
    double dot = 0;
    for (int i = 0; i < l.head_dim; ++i) dot += double{q[i]} * p.k[rows[t] + i];
    e[t] = std::exp(dot * 0.3);  // scores stay small (|dot| * 0.3 < 20): no max shift needed
    sum += e[t];
  }
  for (size_t t = 0; t < rows.size(); ++t) {
    for (int i = 0; i < l.head_dim; ++i) (*o)[i] += e[t] / sum * p.v[rows[t] + i];
  }
  *lse = std::log(sum);
}

void ExpectClose(const AttentionOutput& a, const AttentionOutput& b, double tol) {
  ASSERT_EQ(a.o.size(), b.o.size());
  ASSERT_EQ(a.lse.size(), b.lse.size());
  for (size_t i = 0; i < a.o.size(); ++i) ASSERT_NEAR(a.o[i], b.o[i], tol) << "o[" << i << "]";
  for (size_t i = 0; i < a.lse.size(); ++i) {
    if (a.lse[i] == kNegInf || b.lse[i] == kNegInf) {
      ASSERT_EQ(a.lse[i], b.lse[i]) << "lse[" << i << "]";
    } else {
      ASSERT_NEAR(a.lse[i], b.lse[i], tol) << "lse[" << i << "]";
    }
  }
}

TEST(AttentionReferenceTest, DecodeMatchesBruteForceOverTheUnionOfSegments) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 20; ++trial) {
    Problem p = RandomProblem(/*num_requests=*/3, /*segments_per_request=*/1 + trial % 5, /*max_tokens=*/23, rng);
    p.q = RandomValues(int64_t{3} * p.num_q_heads * p.layout.head_dim, 1.0, rng);
    absl::StatusOr<AttentionOutput> out = DecodeReference(p.layout, p.table, p.num_q_heads, p.q, p.k, p.v, 0.3);
    ASSERT_TRUE(out.ok()) << out.status();
    for (int r = 0; r < 3; ++r) {
      for (int h = 0; h < p.num_q_heads; ++h) {
        std::vector<double> o;
        double lse;
        BruteForce(p, r, &p.q[(r * p.num_q_heads + h) * p.layout.head_dim], h, 1 << 30, &o, &lse);
        const int64_t row = r * p.num_q_heads + h;
        if (lse == kNegInf) {
          EXPECT_EQ(out->lse[row], kNegInf);
        } else {
          EXPECT_NEAR(out->lse[row], lse, 1e-12);
        }
        for (int i = 0; i < p.layout.head_dim; ++i) {
          ASSERT_NEAR(out->o[row * p.layout.head_dim + i], o[i], 1e-12) << "trial " << trial;
        }
      }
    }
  }
}

// Two tokens, each its own segment, head_dim 2, scale 1: q = (1, 0); k0 = (0, 0), k1 = (ln 3, 0) give
// scores 0 and ln 3, weights 1/4 and 3/4; v0 = (4, 1), v1 = (8, -1) give o = (1 + 6, 1/4 - 3/4) = (7, -0.5)
// and lse = ln(1 + 3) = ln 4.
TEST(AttentionReferenceTest, HandComputedTwoSegmentCase) {
  PagedKvLayout layout{/*num_pages=*/2, /*page_size=*/1, /*num_kv_heads=*/1, /*head_dim=*/2};
  SegmentTable table;
  table.AddRequest({{{1}, 1}, {{0}, 1}});  // token 0 on page 1, token 1 on page 0
  const std::vector<float> k = {static_cast<float>(std::log(3.0)), 0, 0, 0};
  const std::vector<float> v = {8, -1, 4, 1};
  absl::StatusOr<AttentionOutput> out = DecodeReference(layout, table, 1, {1, 0}, k, v, 1.0);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->o[0], 7.0, 1e-6);  // ln 3 rounded to float moves the weights by ~1e-8
  EXPECT_NEAR(out->o[1], -0.5, 1e-6);
  EXPECT_NEAR(out->lse[0], std::log(4.0), 1e-6);
}

TEST(AttentionReferenceTest, MergeIsInvariantToSegmentOrder) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 10; ++trial) {
    Problem p = RandomProblem(2, 6, 30, rng);
    p.q = RandomValues(int64_t{2} * p.num_q_heads * p.layout.head_dim, 1.0, rng);
    // The same segments of each request in a shuffled order.
    SegmentTable shuffled;
    shuffled.page_table = p.table.page_table;
    for (int r = 0; r < 2; ++r) {
      std::vector<KvSegment> segs(p.table.segments.begin() + p.table.segment_begin[r],
                                  p.table.segments.begin() + p.table.segment_begin[r + 1]);
      std::shuffle(segs.begin(), segs.end(), rng);
      shuffled.segments.insert(shuffled.segments.end(), segs.begin(), segs.end());
      shuffled.segment_begin.push_back(static_cast<int32_t>(shuffled.segments.size()));
    }
    absl::StatusOr<AttentionOutput> a = DecodeReference(p.layout, p.table, p.num_q_heads, p.q, p.k, p.v, 0.3);
    absl::StatusOr<AttentionOutput> b = DecodeReference(p.layout, shuffled, p.num_q_heads, p.q, p.k, p.v, 0.3);
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectClose(*a, *b, 1e-12);
  }
}

TEST(AttentionReferenceTest, MergeIsInvariantToSplittingASegment) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 10; ++trial) {
    Problem p = RandomProblem(1, 1, 40, rng);
    p.table.segments[0].num_tokens = 37;  // 10 pages; make sure they exist
    p.layout.num_pages = std::max<int64_t>(p.layout.num_pages, 10);
    p.table.page_table.resize(10);
    std::iota(p.table.page_table.begin(), p.table.page_table.end(), 0);
    std::shuffle(p.table.page_table.begin(), p.table.page_table.end(), rng);
    p.k = RandomValues(p.layout.NumElements(), 1.0, rng);
    p.v = RandomValues(p.layout.NumElements(), 1.0, rng);
    p.q = RandomValues(int64_t{p.num_q_heads} * p.layout.head_dim, 1.0, rng);
    // Split after `pages_first` pages into two segments over the same pages.
    const int pages_first = 1 + trial % 9;
    SegmentTable split;
    split.page_table = p.table.page_table;
    split.segments = {{0, pages_first * 4}, {pages_first, 37 - pages_first * 4}};
    split.segment_begin = {0, 2};
    absl::StatusOr<AttentionOutput> a = DecodeReference(p.layout, p.table, p.num_q_heads, p.q, p.k, p.v, 0.3);
    absl::StatusOr<AttentionOutput> b = DecodeReference(p.layout, split, p.num_q_heads, p.q, p.k, p.v, 0.3);
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectClose(*a, *b, 1e-12);
  }
}

TEST(AttentionReferenceTest, EmptySegmentsWeighNothingAndAllEmptyGivesTheEmptyState) {
  std::mt19937_64 rng(4);
  Problem p = RandomProblem(1, 1, 0, rng);  // one empty segment
  p.layout.num_pages = 3;
  p.table = SegmentTable();
  p.table.AddRequest({{{}, 0}, {{}, 0}});               // request 0: all empty
  p.table.AddRequest({{{}, 0}, {{2, 0}, 7}, {{}, 0}});  // request 1: empties around 7 tokens
  p.table.AddRequest({{{2, 0}, 7}});                    // request 2: the 7 tokens alone
  p.k = RandomValues(p.layout.NumElements(), 1.0, rng);
  p.v = RandomValues(p.layout.NumElements(), 1.0, rng);
  std::vector<float> q1 = RandomValues(int64_t{p.num_q_heads} * p.layout.head_dim, 1.0, rng);
  p.q.clear();
  for (int r = 0; r < 3; ++r) p.q.insert(p.q.end(), q1.begin(), q1.end());
  absl::StatusOr<AttentionOutput> out = DecodeReference(p.layout, p.table, p.num_q_heads, p.q, p.k, p.v, 0.3);
  ASSERT_TRUE(out.ok()) << out.status();
  const int per_request = p.num_q_heads * p.layout.head_dim;
  for (int h = 0; h < p.num_q_heads; ++h) {
    EXPECT_EQ(out->lse[h], kNegInf);
    EXPECT_EQ(out->lse[p.num_q_heads + h], out->lse[2 * p.num_q_heads + h]);
  }
  for (int i = 0; i < per_request; ++i) {
    EXPECT_EQ(out->o[i], 0.0);  // not NaN
    EXPECT_EQ(out->o[per_request + i], out->o[2 * per_request + i]);
  }
  EXPECT_EQ(MergeStates({}, 4).lse, kNegInf);
  AttentionState empty{std::vector<double>(4, 0.0), kNegInf};
  AttentionState merged = MergeStates({empty, empty}, 4);
  EXPECT_EQ(merged.lse, kNegInf);
  for (double x : merged.o) EXPECT_EQ(x, 0.0);
}

TEST(AttentionReferenceTest, PrefillMatchesCausalBruteForce) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 10; ++trial) {
    Problem p = RandomProblem(3, 1 + trial % 4, 17, rng);
    std::vector<int32_t> query_begin = {0};
    for (int r = 0; r < 3; ++r) {
      const int64_t tokens = p.table.RequestTokens(r);
      query_begin.push_back(query_begin.back() + static_cast<int32_t>(std::min<int64_t>(tokens, 1 + trial)));
    }
    p.q = RandomValues(int64_t{query_begin.back()} * p.num_q_heads * p.layout.head_dim, 1.0, rng);
    absl::StatusOr<AttentionOutput> out =
        PrefillReference(p.layout, p.table, p.num_q_heads, query_begin, p.q, p.k, p.v, 0.3);
    ASSERT_TRUE(out.ok()) << out.status();
    for (int r = 0; r < 3; ++r) {
      const int64_t n = query_begin[r + 1] - query_begin[r], prefix = p.table.RequestTokens(r) - n;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = query_begin[r] + i;
        for (int h = 0; h < p.num_q_heads; ++h) {
          std::vector<double> o;
          double lse;
          BruteForce(p, r, &p.q[(row * p.num_q_heads + h) * p.layout.head_dim], h, prefix + i + 1, &o, &lse);
          EXPECT_NEAR(out->lse[row * p.num_q_heads + h], lse, 1e-12);
          for (int d = 0; d < p.layout.head_dim; ++d) {
            ASSERT_NEAR(out->o[(row * p.num_q_heads + h) * p.layout.head_dim + d], o[d], 1e-12);
          }
        }
      }
    }
  }
}

// With no prefix, the chunk's first query sees only token 0: o = v_0 and lse = its score.
TEST(AttentionReferenceTest, FirstQueryOfAFreshChunkSeesOneToken) {
  PagedKvLayout layout{/*num_pages=*/2, /*page_size=*/2, /*num_kv_heads=*/1, /*head_dim=*/2};
  SegmentTable table;
  table.AddRequest({{{1, 0}, 3}});
  const std::vector<float> k = {9, 9, 9, 9, 2, 3, 5, 5};  // page 1 holds tokens 0 (2, 3) and 1
  const std::vector<float> v = {9, 9, 9, 9, -1, 4, 7, 7};
  const std::vector<float> q = {1, 1, 1, 1, 1, 1};  // 3 queries
  absl::StatusOr<AttentionOutput> out = PrefillReference(layout, table, 1, {0, 3}, q, k, v, 0.5);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_DOUBLE_EQ(out->o[0], -1.0);
  EXPECT_DOUBLE_EQ(out->o[1], 4.0);
  EXPECT_DOUBLE_EQ(out->lse[0], 0.5 * (2 + 3));
}

TEST(AttentionReferenceTest, RejectsBadTablesAndShapes) {
  PagedKvLayout layout{/*num_pages=*/2, /*page_size=*/2, /*num_kv_heads=*/1, /*head_dim=*/2};
  const std::vector<float> kv(8, 1.0f);
  SegmentTable table;
  table.AddRequest({{{0, 5}, 3}});  // page 5 is outside the pool
  absl::StatusOr<AttentionOutput> out = DecodeReference(layout, table, 1, {1, 1}, kv, kv, 1.0);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("page 5 is outside the pool of 2 pages"), std::string::npos) << out.status();

  SegmentTable short_pages;
  short_pages.AddRequest({{{0}, 3}});  // 3 tokens need 2 pages
  out = DecodeReference(layout, short_pages, 1, {1, 1}, kv, kv, 1.0);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("need 2 pages"), std::string::npos) << out.status();

  SegmentTable ok;
  ok.AddRequest({{{0}, 2}});
  out = DecodeReference(layout, ok, 3, {1, 1, 1, 1, 1, 1}, kv, kv, 1.0);  // 3 heads ok (GQA 3)
  EXPECT_TRUE(out.ok()) << out.status();
  out = DecodeReference(layout, ok, 1, {1, 1, 1}, kv, kv, 1.0);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("q has 3 values"), std::string::npos) << out.status();

  out = PrefillReference(layout, ok, 1, {0, 3}, {1, 1, 1, 1, 1, 1}, kv, kv, 1.0);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("3 queries but 2 context tokens"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace kvsim
