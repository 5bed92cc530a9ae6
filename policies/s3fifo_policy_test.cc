#include "policies/s3fifo_policy.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"
#include "policies/zipf_trace_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

// S3-FIFO straight from Algorithm 1 of the SOSP 2023 paper: three deques (front = head) searched
// linearly, a frequency per resident id. `small` and `main` are the queues' shares of the capacity and
// `ghost` the ghost queue's size in ids. Independent of S3FifoPolicy and BlockLists.
class ReferenceS3Fifo {
 public:
  // `move_above`: the frequency a block leaving S must exceed to move to M (the paper's 1).
  ReferenceS3Fifo(int64_t capacity, int64_t small, int64_t main, int64_t ghost, int move_above = 1)
      : c_(capacity), small_(small), main_(main), ghost_(ghost), move_above_(move_above) {}

  bool Read(BlockId x) {
    if (In(s_, x) || In(m_, x)) {
      freq_[x] = std::min(freq_[x] + 1, 3);
      return true;
    }
    Insert(x);
    freq_[x] = 0;
    return false;
  }

 private:
  static bool In(const std::deque<BlockId>& q, BlockId x) { return std::find(q.begin(), q.end(), x) != q.end(); }
  void Insert(BlockId x) {
    while (static_cast<int64_t>(s_.size() + m_.size()) >= c_) Evict();
    auto g = std::find(g_.begin(), g_.end(), x);
    if (g != g_.end()) {
      g_.erase(g);
      m_.push_front(x);
    } else {
      s_.push_front(x);
    }
  }
  void Evict() {
    if (static_cast<int64_t>(s_.size()) >= small_) {
      EvictS();
    } else {
      EvictM();
    }
  }
  void EvictS() {
    bool evicted = false;
    while (!evicted && !s_.empty()) {
      const BlockId t = s_.back();
      s_.pop_back();
      if (freq_[t] > move_above_) {
        m_.push_front(t);
        if (static_cast<int64_t>(m_.size()) > main_) EvictM();
      } else {
        g_.push_front(t);
        if (static_cast<int64_t>(g_.size()) > ghost_) g_.pop_back();
        freq_.erase(t);
        evicted = true;
      }
    }
  }
  void EvictM() {
    bool evicted = false;
    while (!evicted && !m_.empty()) {
      const BlockId t = m_.back();
      m_.pop_back();
      if (freq_[t] > 0) {
        m_.push_front(t);
        --freq_[t];
      } else {
        freq_.erase(t);
        evicted = true;
      }
    }
  }

  int64_t c_, small_, main_, ghost_;
  int move_above_;
  std::deque<BlockId> s_, m_, g_;
  absl::flat_hash_map<BlockId, int> freq_;
};

TEST(S3FifoPolicyTest, FollowsAlgorithmOneByHand) {
  S3FifoPolicy s3fifo;
  proto::EvictionPolicyConfig config;
  config.mutable_s3fifo()->set_small_queue_ratio(0.5);
  ASSERT_TRUE(s3fifo.Configure(config).ok());
  // Capacity 4: S 2 blocks, M 2, G 2 ids. 1 2 -> S [2 1]; 1 1: freq(1) = 2. 3 4 -> S [4 3 2 1].
  // 5: |S| >= 2: evictS: 1 (freq 2 > 1) -> M [1]; 2 (freq 0) evicted, G [2]. S [5 4 3].
  // 2 (in G): evictS: 3 evicted, G [3]; 2 -> M [2 1]. 4 4 5 5: freq(4) = freq(5) = 2.
  // 6: evictS: 4 -> M [4 2 1], over M's 2: evictM: 1 (freq 2 -> 1) to the head, 2 (freq 0) evicted.
  //    5 -> M [5 1 4], over: evictM: 4 (2 -> 1), 1 (1 -> 0), 5 (2 -> 1), 4 (1 -> 0) to the head, then 1
  //    evicted. S is empty: evictS ends; two blocks went, so 6 enters with room: S [6], M [4 5].
  // 7: room: S [7 6]. 8: evictS: 6 (freq 0) evicted.
  PolicyRun run = DrivePolicy(&s3fifo, 4, {1, 2, 1, 1, 3, 4, 5, 2, 4, 4, 5, 5, 6, 7, 8});
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 2, 1, 6));
  EXPECT_EQ(run.hits, 6);
}

// Hit for hit, S3FifoPolicy driven as cache replay drives it equals Algorithm 1 on Zipf traces at
// several capacities, with the default shares and with others (thresholds, ghost sizes).
TEST(S3FifoPolicyTest, EqualsAlgorithmOneOnZipfTraces) {
  struct Variant {
    double small_ratio;  // 0 = default 0.1
    int32_t threshold;   // 0 = default 2
  };
  for (double alpha : {0.7, 1.0}) {
    const std::vector<BlockId> accesses = ZipfAccesses(3000, alpha, 30000, /*seed=*/11);
    for (const Variant& v : {Variant{0, 0}, Variant{0.25, 0}, Variant{0, 1}}) {
      for (int64_t capacity : {1, 2, 9, 50, 300, 1200}) {
        SCOPED_TRACE(testing::Message() << "alpha " << alpha << " capacity " << capacity << " ratio "
                                        << v.small_ratio << " threshold " << v.threshold);
        S3FifoPolicy s3fifo;
        proto::EvictionPolicyConfig config;
        if (v.small_ratio != 0) config.mutable_s3fifo()->set_small_queue_ratio(v.small_ratio);
        if (v.threshold != 0) config.mutable_s3fifo()->set_move_to_main_threshold(v.threshold);
        ASSERT_TRUE(s3fifo.Configure(config).ok());
        PolicyRun run = DrivePolicy(&s3fifo, capacity, accesses);
        const double ratio = v.small_ratio != 0 ? v.small_ratio : 0.1;
        const int64_t small = std::max<int64_t>(1, std::llround(ratio * capacity));
        ReferenceS3Fifo reference(capacity, small, capacity - small, capacity - small,
                                  (v.threshold != 0 ? v.threshold : 2) - 1);
        int64_t hits = 0;
        for (size_t i = 0; i < accesses.size(); ++i) {
          const bool hit = reference.Read(accesses[i]);
          hits += hit;
          ASSERT_EQ(hit, run.hit[i]) << "access " << i;
        }
        EXPECT_EQ(run.hits, hits);
        EXPECT_GT(hits, 0);
      }
    }
  }
}

TEST(S3FifoPolicyTest, RejectsBadParameters) {
  S3FifoPolicy s3fifo;
  proto::EvictionPolicyConfig config;
  config.mutable_s3fifo()->set_small_queue_ratio(1.5);
  absl::Status status = s3fifo.Configure(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("small_queue_ratio"), absl::string_view::npos);
  proto::EvictionPolicyConfig other;
  other.mutable_two_q()->set_kin_ratio(0.5);
  EXPECT_EQ(S3FifoPolicy().Configure(other).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateEvictionPolicy("s3fifo").ok());
}

}  // namespace
}  // namespace kvsim
