// Benchmarks of issue 7 on the GPU (Google Benchmark, manual time from CUDA events; each iteration reads
// a different copy of the KV pools so that L2 does not serve them):
//   BM_CopyBandwidth         device-to-device copy (read + write bytes per second): the practical ceiling.
//   BM_Decode/<format_page>  multi-segment decode at batch 64, context 8192, 32 query / 8 KV heads, head
//                            dim 128, 4 segments per request, including the merge. Counters:
//                            kv_bytes_per_second (K, V and scales read once), fraction_of_copy (vs
//                            BM_CopyBandwidth; target >= 0.8 for bf16), floor_us (bytes / copy rate),
//                            merge_fraction (merge time / decode+merge time; target < 0.05),
//                            speedup_vs_bf16 at the same page size (target >= 2.5 for int4 g128).
//   BM_Prefill               chunk 2048 over a 6144-token prefix in 4 segments, 32/8 heads: TFLOP/s.
//   BM_KvProjection          recompute GEMM [8192 x 4096] . [4096 x 2048] through cuBLASLt: TFLOP/s.
// Without a GPU every benchmark reports an error and is skipped.
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "benchmark/benchmark.h"
#include "kernels/attention_runner.h"
#include "kernels/blaslt_gemm.h"
#include "kernels/calibration.h"
#include "kernels/device.h"
#include "kernels/reference/kv_quant.h"

namespace kvsim {
namespace {

constexpr int kBatch = 64, kContext = 8192, kSegments = 4, kQHeads = 32, kKvHeads = 8, kHeadDim = 128;
constexpr int kPageSize = 16, kCopies = 2;  // 2 copies of >= 0.5 GB each: far beyond the 60 MB L2
constexpr int kDefaultMinCtas = 132 * 4;    // what kvsim calibrate plans with on an H200 (4 CTAs per SM)

double g_copy_bytes_per_second = 0;
std::map<int, double> g_bf16_decode_seconds;  // by page size

bool SkipWithoutGpu(benchmark::State& state) {
  if (CudaDeviceAvailable()) return false;
  state.SkipWithError("no GPU");
  for (auto _ : state) {
  }
  return true;
}

void BM_CopyBandwidth(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  for (auto _ : state) {
    absl::StatusOr<double> bw = MeasureCopyBandwidth(int64_t{2} << 30, 20);
    if (!bw.ok()) {
      state.SkipWithError(bw.status().ToString().c_str());
      return;
    }
    g_copy_bytes_per_second = *bw;
    state.SetIterationTime(2.0 * (int64_t{2} << 30) / *bw);
  }
  state.counters["bytes_per_second"] = g_copy_bytes_per_second;
}

// Segments of 2048 tokens over random pages, filled with random codes on the device.
void BM_Decode(benchmark::State& state, KvDtype dtype, int group_size, int page_size, int min_ctas,
               DecodeKernel kernel) {
  if (SkipWithoutGpu(state)) return;
  PagedKvLayout layout{int64_t{kBatch} * kContext / page_size, page_size, kKvHeads, kHeadDim};
  std::mt19937_64 rng(5);
  std::vector<int32_t> pages(layout.num_pages);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  SegmentTable table;
  int next = 0;
  for (int r = 0; r < kBatch; ++r) {
    std::vector<SegmentTable::SegmentSpec> specs(kSegments);
    for (auto& spec : specs) {
      spec.num_tokens = kContext / kSegments;
      for (int i = 0; i < spec.num_tokens / page_size; ++i) spec.pages.push_back(pages[next++]);
    }
    table.AddRequest(specs);
  }
  // Device pools: data then (for scaled formats) scale and zero arrays, kCopies of each.
  const int64_t elements = layout.NumElements();
  const int64_t data_bytes = elements * KvDtypeBits(dtype) / 8;
  const int64_t tokens = layout.num_pages * page_size * kKvHeads;
  int64_t k_param = 0, v_param = 0;
  if (dtype == KvDtype::kFp8E4m3 || dtype == KvDtype::kInt8) k_param = v_param = tokens;
  if (dtype == KvDtype::kInt4 || dtype == KvDtype::kInt2) {
    k_param = layout.num_pages * kKvHeads * (page_size / KeyGroupTokens(group_size, page_size)) * kHeadDim;
    v_param = tokens * (kHeadDim / group_size);
  }
  const bool has_zero = dtype == KvDtype::kInt4 || dtype == KvDtype::kInt2;
  const int64_t kv_bytes = 2 * data_bytes + 4 * (k_param + v_param) * (has_zero ? 2 : 1);
  struct Pool {
    DeviceBuffer data, scale, zero;
  };
  Pool pools[kCopies][2];
  for (int c = 0; c < kCopies; ++c) {
    for (int kv = 0; kv < 2; ++kv) {
      const int64_t params = kv == 0 ? k_param : v_param;
      auto data = DeviceBuffer::Allocate(data_bytes);
      auto scale = DeviceBuffer::Allocate(params * 4);
      auto zero = DeviceBuffer::Allocate(has_zero ? params * 4 : 0);
      if (!data.ok() || !scale.ok() || !zero.ok()) {
        state.SkipWithError("allocation failed");
        return;
      }
      const uint64_t seed = 17 + c * 2 + kv;
      absl::Status fill = dtype == KvDtype::kBf16 ? DeviceFillRandom(data->get(), data_bytes, FillKind::kBf16, seed)
                                                  : DeviceFillRandom(data->get(), data_bytes, FillKind::kBytes, seed,
                                                                     dtype == KvDtype::kFp8E4m3 ? 0xB7 : 0xff);
      fill.Update(DeviceFillRandom(scale->get(), params * 4, FillKind::kFloat, seed + 100, 0xff, 0.002f, 0.02f));
      if (has_zero)
        fill.Update(DeviceFillRandom(zero->get(), params * 4, FillKind::kFloat, seed + 200, 0xff, -0.1f, 0.f));
      if (!fill.ok()) {
        state.SkipWithError(fill.ToString().c_str());
        return;
      }
      pools[c][kv] = Pool{std::move(*data), std::move(*scale), std::move(*zero)};
    }
  }
  auto view = [&](int c, int kv) {
    DeviceKvPool p;
    p.data = pools[c][kv].data.get();
    p.scale = static_cast<const float*>(pools[c][kv].scale.get());
    p.zero = static_cast<const float*>(pools[c][kv].zero.get());
    return p;
  };
  std::normal_distribution<double> normal(0, 1);
  std::vector<float> q(int64_t{kBatch} * kQHeads * kHeadDim);
  for (float& x : q) x = static_cast<float>(normal(rng));
  auto problem = DeviceDecodeProblem::CreateWithDeviceKv(layout, table, kQHeads, q, dtype, group_size, view(0, 0),
                                                         view(0, 1), 1.0 / std::sqrt(128.0), min_ctas);
  if (!problem.ok()) {
    state.SkipWithError(problem.status().ToString().c_str());
    return;
  }
  (*problem)->UseKernel(kernel);
  DeviceTimer timer;
  std::vector<double> total_s, merge_s;
  int iteration = 0;
  for (int w = 0; w < 3; ++w) (void)(*problem)->Run();
  for (auto _ : state) {
    const int c = iteration++ % kCopies;
    (*problem)->UseKv(view(c, 0), view(c, 1));
    absl::Status s = timer.Start();
    s.Update((*problem)->Run());
    absl::StatusOr<double> ms = timer.StopMs();
    if (!s.ok() || !ms.ok()) {
      state.SkipWithError((s.ok() ? ms.status() : s).ToString().c_str());
      return;
    }
    state.SetIterationTime(*ms * 1e-3);
    total_s.push_back(*ms * 1e-3);
    if (!(*problem)->plan().direct) {
      (void)timer.Start();
      (void)(*problem)->RunMergeOnly();
      absl::StatusOr<double> merge_ms = timer.StopMs();
      if (merge_ms.ok()) merge_s.push_back(*merge_ms * 1e-3);
    }
  }
  double p10, median, p90, merge_median = 0;
  Percentiles(total_s, &p10, &median, &p90);
  if (!merge_s.empty()) Percentiles(merge_s, &p10, &merge_median, &p90);
  state.counters["median_us"] = median * 1e6;
  state.counters["kv_bytes"] = static_cast<double>(kv_bytes);
  state.counters["kv_bytes_per_second"] = kv_bytes / median;
  state.counters["merge_fraction"] = merge_median / median;
  state.counters["work_items"] = static_cast<double>((*problem)->plan().items.size());
  state.counters["chunk_tokens"] = (*problem)->plan().chunk_tokens;
  if (g_copy_bytes_per_second > 0) {
    state.counters["fraction_of_copy"] = kv_bytes / median / g_copy_bytes_per_second;
    state.counters["floor_us"] = kv_bytes / g_copy_bytes_per_second * 1e6;
  }
  if (dtype == KvDtype::kBf16 && min_ctas == kDefaultMinCtas && kernel == DecodeKernel::kAuto) {
    g_bf16_decode_seconds[page_size] = median;
  }
  if (g_bf16_decode_seconds.count(page_size)) {
    state.counters["speedup_vs_bf16"] = g_bf16_decode_seconds[page_size] / median;  // same page size
  }
}

void BM_Prefill(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  constexpr int kChunk = 2048, kPrefix = 6144;
  PagedKvLayout layout{(kChunk + kPrefix) / kPageSize, kPageSize, kKvHeads, kHeadDim};
  std::mt19937_64 rng(9);
  std::vector<int32_t> pages(layout.num_pages);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  SegmentTable table;
  std::vector<SegmentTable::SegmentSpec> specs(5);
  int next = 0;
  for (int s = 0; s < 5; ++s) {
    specs[s].num_tokens = s < 4 ? kPrefix / 4 : kChunk;
    for (int i = 0; i < specs[s].num_tokens / kPageSize; ++i) specs[s].pages.push_back(pages[next++]);
  }
  table.AddRequest(specs);
  auto k = DeviceBuffer::Allocate(layout.NumElements() * 2);
  auto v = DeviceBuffer::Allocate(layout.NumElements() * 2);
  if (!k.ok() || !v.ok() || !DeviceFillRandom(k->get(), k->size_bytes(), FillKind::kBf16, 1).ok() ||
      !DeviceFillRandom(v->get(), v->size_bytes(), FillKind::kBf16, 2).ok()) {
    state.SkipWithError("allocation failed");
    return;
  }
  std::normal_distribution<double> normal(0, 1);
  std::vector<float> q(int64_t{kChunk} * kQHeads * kHeadDim);
  for (float& x : q) x = static_cast<float>(normal(rng));
  auto problem = DevicePrefillProblem::CreateWithDeviceKv(layout, table, kQHeads, {0, kChunk}, q, k->get(), v->get(),
                                                          1.0 / std::sqrt(128.0));
  if (!problem.ok()) {
    state.SkipWithError(problem.status().ToString().c_str());
    return;
  }
  DeviceTimer timer;
  for (int w = 0; w < 3; ++w) (void)(*problem)->Run();
  std::vector<double> times;
  for (auto _ : state) {
    (void)timer.Start();
    (void)(*problem)->Run();
    absl::StatusOr<double> ms = timer.StopMs();
    if (!ms.ok()) {
      state.SkipWithError(ms.status().ToString().c_str());
      return;
    }
    state.SetIterationTime(*ms * 1e-3);
    times.push_back(*ms * 1e-3);
  }
  double p10, median, p90;
  Percentiles(times, &p10, &median, &p90);
  // Causal within the chunk: each query sees the prefix and half the chunk on average.
  const double flops = 4.0 * kQHeads * kHeadDim * kChunk * (kPrefix + (kChunk + 1) / 2.0);
  state.counters["median_us"] = median * 1e6;
  state.counters["tflops"] = flops / median / 1e12;
}

void BM_KvProjection(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const int64_t m = 8192, k = 4096, n = 2048;
  auto gemm = BlasLtGemm::Create();
  auto a = DeviceBuffer::Allocate(m * k * 2);
  auto b = DeviceBuffer::Allocate(k * n * 2);
  auto c = DeviceBuffer::Allocate(m * n * 2);
  if (!gemm.ok() || !a.ok() || !b.ok() || !c.ok() ||
      !DeviceFillRandom(a->get(), a->size_bytes(), FillKind::kBf16, 3).ok() ||
      !DeviceFillRandom(b->get(), b->size_bytes(), FillKind::kBf16, 4).ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  DeviceTimer timer;
  for (int w = 0; w < 3; ++w) (void)(*gemm)->Run(m, n, k, a->get(), b->get(), c->get());
  std::vector<double> times;
  for (auto _ : state) {
    (void)timer.Start();
    absl::Status s = (*gemm)->Run(m, n, k, a->get(), b->get(), c->get());
    absl::StatusOr<double> ms = timer.StopMs();
    if (!s.ok() || !ms.ok()) {
      state.SkipWithError((s.ok() ? ms.status() : s).ToString().c_str());
      return;
    }
    state.SetIterationTime(*ms * 1e-3);
    times.push_back(*ms * 1e-3);
  }
  double p10, median, p90;
  Percentiles(times, &p10, &median, &p90);
  state.counters["median_us"] = median * 1e6;
  state.counters["tflops"] = 2.0 * m * n * k / median / 1e12;
}

BENCHMARK(BM_CopyBandwidth)->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
// Page 16 for the headline bf16 figure; page 128 where int4 g128 keys form whole 128-token groups (keys are
// grouped per channel over min(group, page) tokens), with bf16 at page 128 for its speedup.
#define KVSIM_DECODE_BENCHMARK(name, dtype, group, page, min_ctas, kernel) \
  BENCHMARK_CAPTURE(BM_Decode, name, dtype, group, page, min_ctas, kernel) \
      ->UseManualTime()                                                    \
      ->Iterations(50)                                                     \
      ->Unit(benchmark::kMicrosecond)
constexpr DecodeKernel kAuto = DecodeKernel::kAuto, kCudaCores = DecodeKernel::kCudaCores;
KVSIM_DECODE_BENCHMARK(bf16_page16, KvDtype::kBf16, 0, 16, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(fp8_page16, KvDtype::kFp8E4m3, 0, 16, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(int8_page16, KvDtype::kInt8, 0, 16, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(int4_g32_page16, KvDtype::kInt4, 32, 16, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(int4_g128_page16, KvDtype::kInt4, 128, 16, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(int2_g32_page16, KvDtype::kInt2, 32, 16, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(bf16_page128, KvDtype::kBf16, 0, 128, kDefaultMinCtas, kAuto);
KVSIM_DECODE_BENCHMARK(int4_g128_page128, KvDtype::kInt4, 128, 128, kDefaultMinCtas, kAuto);
// Split sizes: the planner halves the chunk (2048 tokens at the default) until items x KV heads reach
// min_ctas; these force chunks of 1024 and 512 tokens (more CTAs, shorter tail, more merge work).
KVSIM_DECODE_BENCHMARK(bf16_page16_chunk1024, KvDtype::kBf16, 0, 16, 4096, kAuto);
KVSIM_DECODE_BENCHMARK(bf16_page16_chunk512, KvDtype::kBf16, 0, 16, 8192, kAuto);
KVSIM_DECODE_BENCHMARK(int4_g128_page128_chunk1024, KvDtype::kInt4, 128, 128, 4096, kAuto);
// The CUDA-core kernel at the headline shapes, for comparison.
KVSIM_DECODE_BENCHMARK(bf16_page16_cuda_cores, KvDtype::kBf16, 0, 16, kDefaultMinCtas, kCudaCores);
KVSIM_DECODE_BENCHMARK(int4_g128_page128_cuda_cores, KvDtype::kInt4, 128, 128, kDefaultMinCtas, kCudaCores);
BENCHMARK(BM_Prefill)->UseManualTime()->Iterations(30)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KvProjection)->UseManualTime()->Iterations(30)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvsim

BENCHMARK_MAIN();
