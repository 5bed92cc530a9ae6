#include "sim/serving/router.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "sim/serving/block_manager.h"
#include "sim/serving/request_state.h"
#include "sim/serving/scheduler.h"
#include "sim/serving/testing/fake_cost_model.h"
#include "sim/serving/testing/test_util.h"

namespace kvsim {
namespace {

class RouterTest : public testing::Test {
 protected:
  void SetUp() override {
    BlockManagerOptions options;
    options.gpu_capacity_blocks = 100;
    options.block_tokens = 16;
    options.block_bytes = 100;
    options.policy.set_name("test_lru");
    const proto::ExperimentConfig config = TestConfig(100);
    for (int r = 0; r < 3; ++r) {
      blocks_.push_back(*BlockManager::Create(options, &cost_));
      blocks_.back()->ShareGpuDirectory(&directory_, r);
      schedulers_.push_back(
          std::make_unique<Scheduler>(config.scheduler(), false, &cost_, blocks_.back().get(), &pool_, r,
                                      /*record_token_gaps=*/false, /*advance_decode_runs=*/true));
    }
  }
  std::vector<const Scheduler*> Replicas() const {
    return {schedulers_[0].get(), schedulers_[1].get(), schedulers_[2].get()};
  }
  // Queues a request of `tokens` prompt tokens and 10 output tokens on `replica`.
  void Load(int replica, int64_t tokens) {
    const int32_t slot = pool_.Allocate();
    pool_.at(slot).request = MakeRequest(slot, 0, tokens, 10);
    schedulers_[replica]->Enqueue(slot);
  }
  // Leaves `hashes` cached on `replica`'s GPU.
  void Cache(int replica, std::vector<uint64_t> hashes) {
    RequestState state;
    state.request = MakeRequest(99, 0, 16 * hashes.size(), 1, hashes);
    state.prefill_target_tokens = state.request.input_tokens;
    ASSERT_TRUE(blocks_[replica]->Admit(&state, 0));
    state.AdvanceCompute(state.remaining_compute_tokens());
    blocks_[replica]->Publish(&state, 0);
    blocks_[replica]->Release(&state, 0);
  }

  FakeCostModel cost_{FakeCosts{.fixed_ns = 1000}};
  GpuBlockDirectory directory_{3};  // kept by the three replicas' block managers
  RequestPool pool_;
  std::vector<std::unique_ptr<BlockManager>> blocks_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
};

TEST_F(RouterTest, RoundRobinCyclesThroughReplicas) {
  proto::ClusterConfig config;
  config.set_router(proto::ROUTER_KIND_ROUND_ROBIN);
  Router router(config, Replicas());
  const Request request = MakeRequest(0, 0, 16, 1);
  std::vector<int32_t> picks;
  for (int i = 0; i < 4; ++i) picks.push_back(router.Route(request));
  EXPECT_EQ(picks, (std::vector<int32_t>{0, 1, 2, 0}));
}

TEST_F(RouterTest, LeastTokensPicksTheLeastOutstanding) {
  proto::ClusterConfig config;
  config.set_router(proto::ROUTER_KIND_LEAST_TOKENS);
  Router router(config, Replicas());
  Load(0, 100);  // 110 outstanding
  Load(1, 50);   // 60
  Load(2, 80);   // 90
  EXPECT_EQ(router.Route(MakeRequest(0, 0, 16, 1)), 1);
}

// Each cache-aware case runs twice: probing the replicas' caches, and reading the shared directory.
class CacheAwareRouterTest : public RouterTest, public testing::WithParamInterface<bool> {
 protected:
  Router MakeRouter(double load_cap) {
    proto::ClusterConfig config;
    config.set_router(proto::ROUTER_KIND_CACHE_AWARE);
    config.set_load_cap(load_cap);
    return Router(config, Replicas(), GetParam() ? &directory_ : nullptr);
  }
};

TEST_P(CacheAwareRouterTest, PrefersTheLongestResidentPrefixWithinTheLoadCap) {
  Router router = MakeRouter(2.0);
  Cache(1, {1});
  Cache(2, {1, 2});
  const Request request = MakeRequest(0, 0, 48, 1, {1, 2, 3});
  Load(0, 90);                          // 100 outstanding
  Load(1, 90);                          // 100
  Load(2, 90);                          // 100
  EXPECT_EQ(router.Route(request), 2);  // 2 leading blocks resident
  Load(2, 140);                         // 250 > 2 x 100: over the cap
  EXPECT_EQ(router.Route(request), 1);  // next longest prefix
}

TEST_P(CacheAwareRouterTest, TiesGoToTheFewerOutstandingTokensThenTheLowerIndex) {
  Router router = MakeRouter(10.0);
  Cache(0, {1, 2});
  Cache(1, {1, 2, 7});  // block 7 is not the request's third block: still 2 leading blocks
  Cache(2, {1});
  const Request request = MakeRequest(0, 0, 48, 1, {1, 2, 3});
  Load(0, 40);                          // 50 outstanding on each replica
  Load(1, 40);
  Load(2, 40);
  EXPECT_EQ(router.Route(request), 0);  // 0 and 1 hold 2 blocks at equal load: the lower index
  Load(0, 10);                          // 60 on 0, 50 on 1
  EXPECT_EQ(router.Route(request), 1);  // the fewer outstanding tokens
  const Request cold = MakeRequest(0, 0, 32, 1, {5, 6});
  EXPECT_EQ(router.Route(cold), 1);  // no replica holds block 5: all tie at 0; 1 and 2 least loaded
  Load(1, 10);                       // 60 on 1
  EXPECT_EQ(router.Route(cold), 2);
}

TEST_P(CacheAwareRouterTest, AnEvictedBlockNoLongerCounts) {
  Router router = MakeRouter(10.0);
  Cache(1, {1, 2});
  const Request request = MakeRequest(0, 0, 32, 1, {1, 2});
  EXPECT_EQ(router.Route(request), 1);
  // 100 fresh blocks on replica 1 evict both of the request's blocks (least recently used first).
  std::vector<uint64_t> fresh;
  for (uint64_t h = 1000; h < 1100; ++h) fresh.push_back(h);
  Cache(1, fresh);
  ASSERT_EQ(blocks_[1]->GpuPrefixBlocks(request), 0);
  EXPECT_EQ(directory_.Holders(1), 0u);
  EXPECT_EQ(router.Route(request), 0);  // all tie at 0 blocks and 0 load
}

INSTANTIATE_TEST_SUITE_P(ProbeOrDirectory, CacheAwareRouterTest, testing::Bool());

}  // namespace
}  // namespace kvsim
