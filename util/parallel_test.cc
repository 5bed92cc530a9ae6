#include "util/parallel.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(ParallelForTest, RunsEveryItemExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> runs(n);
      for (auto& r : runs) r = 0;
      ParallelFor(threads, n, [&](size_t i, int) { ++runs[i]; });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
    }
  }
}

TEST(ParallelForTest, WorkersAreNumberedBelowTheThreadCountAndTheCallerIsWorkerZero) {
  std::mutex mu;
  std::set<int> workers;
  bool caller_is_zero = true;
  const std::thread::id caller = std::this_thread::get_id();
  ParallelFor(3, 300, [&](size_t, int worker) {
    std::lock_guard<std::mutex> lock(mu);
    workers.insert(worker);
    if (std::this_thread::get_id() == caller && worker != 0) caller_is_zero = false;
    if (std::this_thread::get_id() != caller && worker == 0) caller_is_zero = false;
  });
  EXPECT_TRUE(caller_is_zero);
  ASSERT_FALSE(workers.empty());
  EXPECT_GE(*workers.begin(), 0);
  EXPECT_LT(*workers.rbegin(), 3);
}

TEST(ParallelForTest, NeverMoreWorkersThanItems) {
  std::atomic<int> max_worker{0};
  ParallelFor(16, 2, [&](size_t, int worker) {
    int seen = max_worker.load();
    while (worker > seen && !max_worker.compare_exchange_weak(seen, worker)) {
    }
  });
  EXPECT_LT(max_worker.load(), 2);
}

TEST(ParallelForTest, NeverMoreThanMaxThreadsWorkers) {
  std::atomic<int> max_worker{0};
  ParallelFor(kMaxThreads * 4, kMaxThreads * 8, [&](size_t, int worker) {
    int seen = max_worker.load();
    while (worker > seen && !max_worker.compare_exchange_weak(seen, worker)) {
    }
  });
  EXPECT_LT(max_worker.load(), kMaxThreads);
}

TEST(ParallelForTest, OneThreadRunsInIndexOrderOnTheCaller) {
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  ParallelFor(1, 5, [&](size_t i, int worker) {
    EXPECT_EQ(worker, 0);
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(ResolveThreadCountTest, ZeroMeansEveryCoreAndTheResultIsAtLeastOne) {
  EXPECT_EQ(ResolveThreadCount(3), 3);
  EXPECT_EQ(ResolveThreadCount(0), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_GE(ResolveThreadCount(-1), 1);
}

}  // namespace
}  // namespace kvsim
