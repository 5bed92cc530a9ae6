// File: util/parallel.h
//
// ParallelFor: the independent items [0, n) spread over a few threads, each item run exactly once. Items
// are handed out in index order as threads free up (an atomic counter), so uneven items balance; the
// calling thread is worker 0 and works too. Results must not depend on which worker runs an item: give
// each item its own output, or per-worker scratch indexed by `worker`.
//
// Example:
//   std::vector<Result> results(items.size());
//   ParallelFor(ResolveThreadCount(options.num_threads), items.size(),
//               [&](size_t i, int worker) { results[i] = Run(items[i], &scratch[worker]); });
#ifndef KVSIM_UTIL_PARALLEL_H_
#define KVSIM_UTIL_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace kvsim {

// The most threads a caller should ask for: more than any machine's cores, few enough that their
// stacks and per-thread buffers fit (callers refuse larger requests).
constexpr int kMaxThreads = 1024;

// The threads to use for `requested` (0 = every core the machine reports; at least 1).
inline int ResolveThreadCount(int requested) {
  const int threads = requested > 0 ? requested : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, threads);
}

// Runs fn(i, worker) for every i in [0, n) on min(num_threads, kMaxThreads, n) threads (at least the
// caller's), worker in [0, that count). Returns when every item is done. fn must not throw.
template <typename Fn>
void ParallelFor(int num_threads, size_t n, const Fn& fn) {
  const int allowed = std::min(std::max(1, num_threads), kMaxThreads);
  const int workers = static_cast<int>(std::max<size_t>(1, std::min<size_t>(allowed, n)));
  if (workers == 1) {
    for (size_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&](int worker) {
    for (size_t i = next++; i < n; i = next++) fn(i, worker);
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (int w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (std::thread& thread : threads) thread.join();
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_PARALLEL_H_
