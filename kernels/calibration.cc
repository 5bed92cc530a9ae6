#include "kernels/calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cost_models/calibration_table.h"
#include "kernels/attention_runner.h"
#include "kernels/blaslt_gemm.h"
#include "kernels/device.h"
#include "kernels/recompute_shapes.h"
#include "kernels/reference/attention_reference.h"
#include "kernels/reference/kv_quant.h"
#include "util/percentile.h"
#include "util/status_macros.h"

// Order of a run: the kernels are checked against the float64 reference before anything is timed (a
// mismatch fails the run); then host-to-device copies, GEMMs, decode and prefill attention, prefill last
// as its points cost the most. With a budget, each kind's deadline is now + (time left) x its share of
// the points still to time, so time a kind leaves unused passes to the next. The table is normalised and
// validated (NormaliseCalibrationPoints) only once every kind is done.
// Invariants:
// - SweepKind times a kind's points in CoverageOrder, so a cut sweep is an even subset, but keeps each
//   result at its grid index and appends them in grid order: the table's order never depends on the
//   budget. The one `rng` is drawn in timing order (page shuffles, seeds, query values).
// - A pool is made of `copies` copies (RotationCopies: enough for 4 x L2 between two uses of a copy, at
//   most 60% of free memory and 256; GEMMs at most 16), and run i of a point, warm-ups included, uses
//   copy i mod copies, so that memory permitting a run does not find its data left in L2 by the run
//   before. Copies and the merge-only runs do not rotate.
// - TimeRuns: warm-up runs, a synchronise, one probe run; a probe under 20 us sets a group of up to 64
//   back-to-back runs per timed sample; every sample is the group's time divided by its size.
//   Percentiles are nearest rank.
// - A decode point's merge-only figure (segment_merge) is timed only for bf16 and only when the plan
//   splits the context (not direct); device-to-host copies go to the notes, not the table.
// Host-side cost: pools are filled on the device (DeviceFillRandom), not uploaded; a point's problem is
// built once and each run only swaps the KV pointers (UseKv), so the loop between timed runs is a launch.

namespace kvsim {
namespace {

constexpr int kHeadDim = 128;
constexpr int kKvHeads = 8;
const LayerShape kLayer{4096, 32, 8, 128, 14336};  // Llama-3-8B-like layer for the GEMM sweep
constexpr int64_t kVocab = 128256;                 // its vocabulary (the LM head's output features)

bool Wanted(const CalibrationOptions& options, const std::string& kind) {
  return options.only.empty() || std::find(options.only.begin(), options.only.end(), kind) != options.only.end();
}

std::vector<float> RandomBf16Values(int64_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<float> out(n);
  for (float& x : out) x = RoundToBf16(static_cast<float>(dist(rng)));
  return out;
}

// Splits `tokens` into `segments` page-aligned runs (the last takes the remainder) over distinct random
// pages drawn from `pages` (a shuffled list consumed from `next`).
void AddSegmentedRequest(int64_t tokens, int segments, int page_size, const std::vector<int32_t>& pages, int64_t* next,
                         SegmentTable* table, int extra_tokens = 0) {
  std::vector<SegmentTable::SegmentSpec> specs;
  const int64_t per =
      segments > 0 ? std::max<int64_t>(page_size, tokens / segments / page_size * page_size) : 0;  // 0: no prefix
  int64_t left = tokens;
  for (int s = 0; s < segments && left > 0; ++s) {
    SegmentTable::SegmentSpec spec;
    spec.num_tokens = static_cast<int32_t>(s == segments - 1 ? left : std::min(per, left));
    left -= spec.num_tokens;
    for (int i = 0; i < (spec.num_tokens + page_size - 1) / page_size; ++i) spec.pages.push_back(pages[(*next)++]);
    specs.push_back(spec);
  }
  if (extra_tokens > 0) {  // the prefill chunk's own segment
    SegmentTable::SegmentSpec spec;
    spec.num_tokens = extra_tokens;
    for (int i = 0; i < (extra_tokens + page_size - 1) / page_size; ++i) spec.pages.push_back(pages[(*next)++]);
    specs.push_back(spec);
  }
  table->AddRequest(specs);
}

std::vector<int32_t> ShuffledPages(int64_t n, std::mt19937_64& rng) {
  std::vector<int32_t> pages(n);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  return pages;
}

// Byte sizes of one pool's data and parameter arrays.
struct PoolBytes {
  int64_t data = 0, scale = 0, zero = 0;
  int64_t Total() const { return data + scale + zero; }
};

PoolBytes KvPoolBytes(const PagedKvLayout& l, KvDtype dtype, int group_size, bool is_key) {
  PoolBytes b;
  b.data = l.NumElements() * KvDtypeBits(dtype) / 8;
  const int64_t tokens = l.num_pages * l.page_size * l.num_kv_heads;
  if (dtype == KvDtype::kFp8E4m3 || dtype == KvDtype::kInt8) b.scale = tokens * 4;
  if (dtype == KvDtype::kInt4 || dtype == KvDtype::kInt2) {
    const int64_t params =
        is_key ? l.num_pages * l.num_kv_heads * (l.page_size / KeyGroupTokens(group_size, l.page_size)) * l.head_dim
               : tokens * (l.head_dim / group_size);
    b.scale = b.zero = params * 4;
  }
  return b;
}

// `copies` copies of a K or V pool in three device arrays, filled with random codes and parameters.
struct RotatedPool {
  PoolBytes bytes;
  DeviceBuffer data, scale, zero;
  DeviceKvPool View(int copy) const {
    DeviceKvPool v;
    v.data = static_cast<const char*>(data.get()) + copy * bytes.data;
    v.scale = bytes.scale ? reinterpret_cast<const float*>(static_cast<const char*>(scale.get()) + copy * bytes.scale)
                          : nullptr;
    v.zero =
        bytes.zero ? reinterpret_cast<const float*>(static_cast<const char*>(zero.get()) + copy * bytes.zero) : nullptr;
    return v;
  }
};

absl::StatusOr<RotatedPool> MakeRotatedPool(const PagedKvLayout& l, KvDtype dtype, int group_size, bool is_key,
                                            int copies, uint64_t seed) {
  RotatedPool pool;
  pool.bytes = KvPoolBytes(l, dtype, group_size, is_key);
  KVSIM_ASSIGN_OR_RETURN(pool.data, DeviceBuffer::Allocate(pool.bytes.data * copies));
  KVSIM_ASSIGN_OR_RETURN(pool.scale, DeviceBuffer::Allocate(pool.bytes.scale * copies));
  KVSIM_ASSIGN_OR_RETURN(pool.zero, DeviceBuffer::Allocate(pool.bytes.zero * copies));
  switch (dtype) {
    case KvDtype::kBf16:
      KVSIM_RETURN_IF_ERROR(DeviceFillRandom(pool.data.get(), pool.data.size_bytes(), FillKind::kBf16, seed));
      break;
    case KvDtype::kFp8E4m3:
      KVSIM_RETURN_IF_ERROR(DeviceFillRandom(pool.data.get(), pool.data.size_bytes(), FillKind::kBytes, seed, 0xB7));
      break;
    default:
      KVSIM_RETURN_IF_ERROR(DeviceFillRandom(pool.data.get(), pool.data.size_bytes(), FillKind::kBytes, seed));
  }
  KVSIM_RETURN_IF_ERROR(
      DeviceFillRandom(pool.scale.get(), pool.scale.size_bytes(), FillKind::kFloat, seed + 1, 0xff, 0.002f, 0.02f));
  KVSIM_RETURN_IF_ERROR(
      DeviceFillRandom(pool.zero.get(), pool.zero.size_bytes(), FillKind::kFloat, seed + 2, 0xff, -0.1f, 0.f));
  return pool;
}

int RotationCopies(int64_t bytes_per_copy, const DeviceProperties& props) {
  const int64_t want = (4 * props.l2_cache_bytes + bytes_per_copy - 1) / std::max<int64_t>(bytes_per_copy, 1);
  const int64_t fit = std::max<int64_t>(1, props.free_memory_bytes * 6 / 10 / std::max<int64_t>(bytes_per_copy, 1));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({want, fit, 256})));
}

// Times `run(i)` (i counts every call) `reps` times after `warmup` untimed runs. A point under
// kShortRunNs per run is timed as groups of back-to-back runs (the group's time divided by its size), so
// that launch gaps are amortised as in continuous serving rather than dominating.
constexpr double kShortRunNs = 20e3;

template <typename Fn>
absl::StatusOr<std::vector<double>> TimeRuns(int warmup, int reps, Fn run) {
  int call = 0;
  for (int i = 0; i < warmup; ++i) KVSIM_RETURN_IF_ERROR(run(call++));
  KVSIM_RETURN_IF_ERROR(DeviceSynchronize());
  DeviceTimer timer;
  KVSIM_RETURN_IF_ERROR(timer.Start());
  KVSIM_RETURN_IF_ERROR(run(call++));
  KVSIM_ASSIGN_OR_RETURN(double probe_ms, timer.StopMs());
  const int group = probe_ms * 1e6 < kShortRunNs
                        ? static_cast<int>(std::min(64.0, std::ceil(kShortRunNs / std::max(probe_ms * 1e6, 1.0))))
                        : 1;
  std::vector<double> ns;
  for (int i = 0; i < reps; ++i) {
    KVSIM_RETURN_IF_ERROR(timer.Start());
    for (int j = 0; j < group; ++j) KVSIM_RETURN_IF_ERROR(run(call++));
    KVSIM_ASSIGN_OR_RETURN(double ms, timer.StopMs());
    ns.push_back(ms * 1e6 / group);
  }
  return ns;
}

void SetTimes(const std::vector<double>& ns, proto::CalibrationPoint* point) {
  double p10 = 0, median = 0, p90 = 0;
  Percentiles(ns, &p10, &median, &p90);
  point->set_p10_ns(p10);
  point->set_median_ns(median);
  point->set_p90_ns(p90);
  point->set_repetitions(static_cast<int32_t>(ns.size()));
}

// An attention point's shape: KV format, batch, query and context tokens, segments, heads, page size.
proto::CalibrationPoint AttentionPoint(proto::KernelKind kind, KvDtype dtype, int group_size, int64_t batch,
                                       int64_t query_tokens, int64_t context_tokens, int64_t num_segments,
                                       int num_q_heads, int page_size) {
  proto::CalibrationPoint p;
  p.set_kind(kind);
  p.set_dtype(CalibrationDtypeName(dtype));
  p.set_group_size(group_size);
  proto::KernelShape* s = p.mutable_shape();
  s->set_batch(batch);
  s->set_query_tokens(query_tokens);
  s->set_context_tokens(context_tokens);
  s->set_num_segments(static_cast<int32_t>(num_segments));
  s->set_num_heads(num_q_heads);
  s->set_num_kv_heads(kKvHeads);
  s->set_head_dim(kHeadDim);
  s->set_page_size(page_size);
  return p;
}

// ---- validation ----------------------------------------------------------------------------------------

absl::Status CompareWithReference(const HostAttentionResult& gpu, const AttentionOutput& ref, double o_tol,
                                  const std::string& what) {
  for (size_t i = 0; i < ref.o.size(); ++i) {
    if (!std::isfinite(gpu.o[i]) || std::fabs(gpu.o[i] - ref.o[i]) > o_tol) {
      return absl::InternalError(absl::StrFormat("validation of %s: o[%d] = %g, reference %g (tolerance %g)", what, i,
                                                 gpu.o[i], ref.o[i], o_tol));
    }
  }
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    const bool both_empty = std::isinf(ref.lse[i]) && gpu.lse[i] == -INFINITY;
    if (!both_empty && !(std::fabs(gpu.lse[i] - ref.lse[i]) <= 1e-3)) {
      return absl::InternalError(
          absl::StrFormat("validation of %s: lse[%d] = %g, reference %g", what, i, gpu.lse[i], ref.lse[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateKernels(uint64_t seed, std::vector<std::string>* notes) {
  std::mt19937_64 rng(seed);
  const double scale = 1.0 / std::sqrt(128.0);
  struct Format {
    KvDtype dtype;
    int group;
  };
  for (Format f : {Format{KvDtype::kBf16, 0}, Format{KvDtype::kFp8E4m3, 0}, Format{KvDtype::kInt8, 0},
                   Format{KvDtype::kInt4, 32}, Format{KvDtype::kInt4, 128}, Format{KvDtype::kInt2, 32}}) {
    PagedKvLayout layout{0, f.dtype == KvDtype::kInt4 && f.group == 128 ? 128 : 16, 2, kHeadDim};
    const int num_q_heads = 8;
    SegmentTable table;
    int64_t next = 0;
    const std::vector<int32_t> pages = ShuffledPages(4 * 80, rng);
    for (int r = 0; r < 4; ++r) AddSegmentedRequest(300 + 97 * r, 1 + r, layout.page_size, pages, &next, &table);
    layout.num_pages = static_cast<int64_t>(pages.size());
    const std::vector<float> q = RandomBf16Values(int64_t{4} * num_q_heads * kHeadDim, rng);
    KVSIM_ASSIGN_OR_RETURN(QuantizedKvPool k,
                           QuantizeKvPool(RandomBf16Values(layout.NumElements(), rng), layout, f.dtype, f.group, true));
    KVSIM_ASSIGN_OR_RETURN(QuantizedKvPool v, QuantizeKvPool(RandomBf16Values(layout.NumElements(), rng), layout,
                                                             f.dtype, f.group, false));
    KVSIM_ASSIGN_OR_RETURN(AttentionOutput ref, DecodeReference(layout, table, num_q_heads, q, DequantizeKvPool(k),
                                                                DequantizeKvPool(v), scale));
    for (int min_ctas : {1, 4096}) {
      KVSIM_ASSIGN_OR_RETURN(auto problem,
                             DeviceDecodeProblem::Create(layout, table, num_q_heads, q, k, v, scale, min_ctas));
      KVSIM_RETURN_IF_ERROR(problem->PoisonOutputs());
      KVSIM_RETURN_IF_ERROR(problem->Run());
      KVSIM_ASSIGN_OR_RETURN(HostAttentionResult out, problem->Download());
      KVSIM_RETURN_IF_ERROR(CompareWithReference(out, ref, 2e-3, "decode " + CalibrationDtypeName(f.dtype)));
    }
  }
  {
    PagedKvLayout layout{0, 16, 2, kHeadDim};
    SegmentTable table;
    int64_t next = 0;
    const std::vector<int32_t> pages = ShuffledPages(3 * 40, rng);
    std::vector<int32_t> query_begin = {0};
    for (int r = 0; r < 3; ++r) {
      AddSegmentedRequest(200 + 50 * r, 1 + r, 16, pages, &next, &table, /*extra_tokens=*/70 + 20 * r);
      query_begin.push_back(query_begin.back() + 70 + 20 * r);
    }
    layout.num_pages = static_cast<int64_t>(pages.size());
    const std::vector<float> q = RandomBf16Values(int64_t{query_begin.back()} * 8 * kHeadDim, rng);
    const std::vector<float> kf = RandomBf16Values(layout.NumElements(), rng);
    const std::vector<float> vf = RandomBf16Values(layout.NumElements(), rng);
    KVSIM_ASSIGN_OR_RETURN(QuantizedKvPool k, QuantizeKvPool(kf, layout, KvDtype::kBf16, 0, true));
    KVSIM_ASSIGN_OR_RETURN(QuantizedKvPool v, QuantizeKvPool(vf, layout, KvDtype::kBf16, 0, false));
    KVSIM_ASSIGN_OR_RETURN(AttentionOutput ref, PrefillReference(layout, table, 8, query_begin, q, kf, vf, scale));
    KVSIM_ASSIGN_OR_RETURN(auto problem, DevicePrefillProblem::Create(layout, table, 8, query_begin, q, k, v, scale));
    KVSIM_RETURN_IF_ERROR(problem->PoisonOutputs());
    KVSIM_RETURN_IF_ERROR(problem->Run());
    KVSIM_ASSIGN_OR_RETURN(HostAttentionResult out, problem->Download());
    KVSIM_RETURN_IF_ERROR(CompareWithReference(out, ref, 2e-2, "prefill"));
  }
  notes->push_back(
      "validation: decode (bf16, fp8, int8, int4 g32/g128, int2; split and unsplit) and prefill "
      "match the float64 reference");
  return absl::OkStatus();
}

// ---- sweeps --------------------------------------------------------------------------------------------

absl::Status TimeDecode(const DecodePoint& pt, const CalibrationOptions& options, const DeviceProperties& props,
                        std::mt19937_64& rng, CalibrationResult* result) {
  PagedKvLayout layout{0, pt.page_size, kKvHeads, kHeadDim};
  const int64_t pages_per_request = (pt.context_tokens + pt.page_size - 1) / pt.page_size + pt.num_segments;
  layout.num_pages = pages_per_request * pt.batch;
  const std::vector<int32_t> pages = ShuffledPages(layout.num_pages, rng);
  SegmentTable table;
  int64_t next = 0;
  for (int r = 0; r < pt.batch; ++r) {
    AddSegmentedRequest(pt.context_tokens, pt.num_segments, pt.page_size, pages, &next, &table);
  }
  const int64_t copy_bytes = KvPoolBytes(layout, pt.dtype, pt.group_size, true).Total() +
                             KvPoolBytes(layout, pt.dtype, pt.group_size, false).Total();
  const int copies = RotationCopies(copy_bytes, props);
  KVSIM_ASSIGN_OR_RETURN(RotatedPool k, MakeRotatedPool(layout, pt.dtype, pt.group_size, true, copies, rng()));
  KVSIM_ASSIGN_OR_RETURN(RotatedPool v, MakeRotatedPool(layout, pt.dtype, pt.group_size, false, copies, rng()));
  const int num_q_heads = kKvHeads * pt.gqa;
  const std::vector<float> q = RandomBf16Values(int64_t{pt.batch} * num_q_heads * kHeadDim, rng);
  KVSIM_ASSIGN_OR_RETURN(auto problem, DeviceDecodeProblem::CreateWithDeviceKv(
                                           layout, table, num_q_heads, q, pt.dtype, pt.group_size, k.View(0), v.View(0),
                                           1.0 / std::sqrt(128.0), props.num_sms * 4));
  KVSIM_ASSIGN_OR_RETURN(std::vector<double> ns, TimeRuns(options.warmup, options.repetitions, [&](int i) {
                           problem->UseKv(k.View(i % copies), v.View(i % copies));
                           return problem->Run();
                         }));
  proto::CalibrationPoint* point = result->table.add_points();
  *point = AttentionPoint(proto::KERNEL_KIND_DECODE_ATTENTION, pt.dtype, pt.group_size, pt.batch, 1, pt.context_tokens,
                          pt.num_segments, num_q_heads, pt.page_size);
  SetTimes(ns, point);
  if (pt.dtype == KvDtype::kBf16 && !problem->plan().direct) {
    KVSIM_ASSIGN_OR_RETURN(std::vector<double> merge_ns,
                           TimeRuns(options.warmup, options.repetitions, [&](int) { return problem->RunMergeOnly(); }));
    proto::CalibrationPoint merge = *point;
    merge.set_kind(proto::KERNEL_KIND_SEGMENT_MERGE);
    merge.mutable_shape()->set_num_segments(
        static_cast<int32_t>(problem->plan().items.size() / pt.batch));  // states per sequence
    SetTimes(merge_ns, &merge);
    *result->table.add_points() = std::move(merge);
  }
  return absl::OkStatus();
}

absl::Status TimePrefill(const PrefillPoint& pt, const CalibrationOptions& options, const DeviceProperties& props,
                         std::mt19937_64& rng, CalibrationResult* result) {
  const int page_size = 16;
  PagedKvLayout layout{0, page_size, kKvHeads, kHeadDim};
  const int64_t pages_per_request = (pt.prefix_tokens + pt.chunk_tokens) / page_size + pt.prefix_segments + 2;
  layout.num_pages = pages_per_request * pt.batch;
  const std::vector<int32_t> pages = ShuffledPages(layout.num_pages, rng);
  SegmentTable table;
  int64_t next = 0;
  std::vector<int32_t> query_begin = {0};
  for (int r = 0; r < pt.batch; ++r) {
    AddSegmentedRequest(pt.prefix_tokens, pt.prefix_tokens > 0 ? pt.prefix_segments : 0, page_size, pages, &next,
                        &table, pt.chunk_tokens);
    query_begin.push_back(query_begin.back() + pt.chunk_tokens);
  }
  const int64_t copy_bytes = 2 * KvPoolBytes(layout, KvDtype::kBf16, 0, true).Total();
  const int copies = RotationCopies(copy_bytes, props);
  KVSIM_ASSIGN_OR_RETURN(RotatedPool k, MakeRotatedPool(layout, KvDtype::kBf16, 0, true, copies, rng()));
  KVSIM_ASSIGN_OR_RETURN(RotatedPool v, MakeRotatedPool(layout, KvDtype::kBf16, 0, false, copies, rng()));
  const int num_q_heads = kKvHeads * pt.gqa;
  const std::vector<float> q = RandomBf16Values(int64_t{query_begin.back()} * num_q_heads * kHeadDim, rng);
  KVSIM_ASSIGN_OR_RETURN(
      auto problem, DevicePrefillProblem::CreateWithDeviceKv(layout, table, num_q_heads, query_begin, q, k.View(0).data,
                                                             v.View(0).data, 1.0 / std::sqrt(128.0)));
  KVSIM_ASSIGN_OR_RETURN(std::vector<double> ns, TimeRuns(options.warmup, options.repetitions, [&](int i) {
                           problem->UseKv(k.View(i % copies).data, v.View(i % copies).data);
                           return problem->Run();
                         }));
  // Segments: the non-contiguous runs the chunk attends to, as the simulator counts them
  // (sim/serving/request_state.h): the prefix's segments, the chunk continuing the last one (1 without a prefix).
  proto::CalibrationPoint* point = result->table.add_points();
  *point = AttentionPoint(proto::KERNEL_KIND_PREFILL_ATTENTION, KvDtype::kBf16, 0, pt.batch, pt.chunk_tokens,
                          pt.prefix_tokens, pt.prefix_tokens > 0 ? pt.prefix_segments : 1, num_q_heads, page_size);
  SetTimes(ns, point);
  return absl::OkStatus();
}

absl::Status TimeGemm(const GemmPoint& pt, BlasLtGemm& gemm, const CalibrationOptions& options,
                      const DeviceProperties& props, std::mt19937_64& rng, CalibrationResult* result) {
  const int64_t a_bytes = pt.tokens * pt.in_features * 2, b_bytes = pt.in_features * pt.out_features * 2;
  const int copies = std::min(RotationCopies(a_bytes + b_bytes, props), 16);
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::Allocate(a_bytes * copies));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(b_bytes * copies));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer c, DeviceBuffer::Allocate(pt.tokens * pt.out_features * 2));
  KVSIM_RETURN_IF_ERROR(DeviceFillRandom(a.get(), a.size_bytes(), FillKind::kBf16, rng()));
  KVSIM_RETURN_IF_ERROR(DeviceFillRandom(b.get(), b.size_bytes(), FillKind::kBf16, rng()));
  KVSIM_ASSIGN_OR_RETURN(std::vector<double> ns, TimeRuns(options.warmup, options.repetitions, [&](int i) {
                           const int copy = i % copies;
                           return gemm.Run(pt.tokens, pt.out_features, pt.in_features,
                                           static_cast<char*>(a.get()) + copy * a_bytes,
                                           static_cast<char*>(b.get()) + copy * b_bytes, c.get());
                         }));
  proto::CalibrationPoint* point = result->table.add_points();
  point->set_kind(pt.kind);
  point->mutable_shape()->set_query_tokens(pt.tokens);
  point->mutable_shape()->set_in_features(pt.in_features);
  point->mutable_shape()->set_out_features(pt.out_features);
  SetTimes(ns, point);
  return absl::OkStatus();
}

absl::Status TimeCopies(const std::vector<int64_t>& sizes, const CalibrationOptions& options,
                        CalibrationResult* result) {
  if (sizes.empty()) return absl::OkStatus();
  const int64_t max_bytes = *std::max_element(sizes.begin(), sizes.end());
  PinnedHostBuffer host;
  KVSIM_RETURN_IF_ERROR(host.Allocate(max_bytes));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer device, DeviceBuffer::Allocate(max_bytes));
  std::fill_n(static_cast<char*>(host.get()), max_bytes, 0x5a);
  for (int64_t bytes : sizes) {
    for (bool h2d : {true, false}) {
      KVSIM_ASSIGN_OR_RETURN(std::vector<double> ns, TimeRuns(options.warmup, options.repetitions, [&](int) {
                               return h2d ? CopyAsync(device.get(), host.get(), bytes, true)
                                          : CopyAsync(host.get(), device.get(), bytes, false);
                             }));
      proto::CalibrationPoint point;
      point.set_kind(proto::KERNEL_KIND_HOST_DEVICE_COPY);
      point.mutable_shape()->set_bytes(bytes);
      SetTimes(ns, &point);
      if (h2d) {
        *result->table.add_points() = point;
      } else {
        result->notes.push_back(absl::StrFormat("device_to_host_copy bytes=%d median_ns=%.0f (%.1f GB/s)", bytes,
                                                point.median_ns(), bytes / point.median_ns()));
      }
    }
  }
  return absl::OkStatus();
}

std::string ClockText(const DeviceProperties& p) {
  return absl::StrFormat("sm %d MHz, mem %d MHz (peak, as reported)", p.sm_clock_khz / 1000, p.memory_clock_khz / 1000);
}

std::string VersionText(int v) { return absl::StrFormat("%d.%d", v / 1000, (v % 1000) / 10); }

// The kernel driver's version from /proc/driver/nvidia/version ("... Kernel Module  580.159.04 ..."),
// with the CUDA driver API version; the API version alone where that file is not readable.
std::string DriverVersionText(int api_version) {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (in && std::getline(in, line)) {
    const std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "Module" && !words[i + 1].empty() && std::isdigit(static_cast<unsigned char>(words[i + 1][0]))) {
        return absl::StrFormat("%s (CUDA driver API %s)", words[i + 1], VersionText(api_version));
      }
    }
  }
  return VersionText(api_version);
}

}  // namespace

std::string CalibrationDtypeName(KvDtype dtype) { return KvDtypeName(dtype); }

void Percentiles(std::vector<double> samples, double* p10, double* median, double* p90) {
  std::sort(samples.begin(), samples.end());
  *p10 = NearestRank(samples, 0.10);
  *median = NearestRank(samples, 0.50);
  *p90 = NearestRank(samples, 0.90);
}

CalibrationGrid MakeCalibrationGrid(bool full) {
  CalibrationGrid grid;
  const int64_t max_tokens = full ? int64_t{1} << 23 : int64_t{1} << 21;
  // Coarse: steps of 4x in batch and 2x in context, so that interpolation between measured points stays
  // within a few percent (kvsim costmodel validate) in under two minutes of sweeping on an H200.
  std::vector<int> batches =
      full ? std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256} : std::vector<int>{1, 4, 16, 64, 256};
  std::vector<int> contexts = full ? std::vector<int>{256,  512,   1024,  1536,  2048,  3072,  4096,  6144,
                                                      8192, 12288, 16384, 24576, 32768, 49152, 65536, 131072}
                                   : std::vector<int>{512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
  std::vector<int> segments = full ? std::vector<int>{1, 2, 4, 8, 16, 64} : std::vector<int>{1, 4, 16};
  struct Format {
    KvDtype dtype;
    int group;
  };
  std::vector<Format> formats = {
      {KvDtype::kBf16, 0}, {KvDtype::kFp8E4m3, 0}, {KvDtype::kInt8, 0}, {KvDtype::kInt4, 32}, {KvDtype::kInt4, 128}};
  if (full) {
    formats.push_back({KvDtype::kInt4, 64});
    formats.push_back({KvDtype::kInt2, 32});
  }
  for (int page_size : {16, 64}) {
    for (int gqa : {4, 8}) {
      for (const Format& f : formats) {
        for (int b : batches) {
          for (int l : contexts) {
            for (int s : segments) {
              if (int64_t{b} * l > max_tokens || int64_t{s} * page_size > l) continue;
              if (!full && (page_size == 64 || gqa == 8) && s != 4) continue;  // coarse: fewer variants
              grid.decode.push_back({b, l, s, f.dtype, f.group, gqa, page_size});
            }
          }
        }
      }
    }
  }
  // Chunks down to 16 tokens (recompute of a few missing blocks), prefixes up to 128K.
  std::vector<int> chunks = full ? std::vector<int>{16, 64, 256, 512, 1024, 2048, 4096, 8192}
                                 : std::vector<int>{16, 64, 128, 512, 2048, 8192};
  std::vector<int> prefixes =
      full ? std::vector<int>{0, 1024, 4096, 16384, 65536, 131072} : std::vector<int>{0, 2048, 8192, 32768, 131072};
  for (int batch : {1, 4}) {
    for (int c : chunks) {
      for (int p : prefixes) {
        for (int s : {1, 4, 16}) {
          if (p == 0 && s != 1) continue;
          if (int64_t{batch} * (c + p) > max_tokens) continue;
          if (!full && batch == 4 && c > 2048) continue;
          grid.prefill.push_back({batch, c, p, s, 4});
        }
      }
    }
  }
  // cuBLASLt changes algorithm between neighbouring token counts (kernels/NOTES.md), so GEMMs are sampled
  // densely on both grids (each point costs milliseconds): 16, 32, 48, 64, 96, then every 64 tokens to 1024
  // and about 8 steps per doubling above (t / 8 rounded down to a multiple of 128).
  // Decode-only iterations run them on as few rows as they have sequences: from 1 row. The LM head (d_model x
  // vocabulary) runs on the sampled rows only, at most a batch: up to 4096.
  std::vector<int64_t> tokens = {1, 2, 4, 8, 16, 32, 48, 64, 96};
  for (int64_t t = 128; t <= (full ? 32768 : 16384); t += t < 1024 ? 64 : t / 8 / 128 * 128) tokens.push_back(t);
  for (int64_t t : tokens) {
    for (const GemmShape& g : KvProjectionGemms(kLayer, t)) {
      grid.gemm.push_back({proto::KERNEL_KIND_KV_PROJECTION, g.name, t, g.k, g.n});
    }
    for (const GemmShape& g : FullLayerGemms(kLayer, t)) {
      grid.gemm.push_back({g.name.rfind("mlp", 0) == 0 ? proto::KERNEL_KIND_MLP_GEMM : proto::KERNEL_KIND_LINEAR_GEMM,
                           g.name, t, g.k, g.n});
    }
    if (t <= 4096) grid.gemm.push_back({proto::KERNEL_KIND_LINEAR_GEMM, "lm_head", t, kLayer.d_model, kVocab});
  }
  grid.copy_bytes = {4096, 16384, 65536, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  if (full) grid.copy_bytes.push_back(int64_t{1} << 30);
  return grid;
}

std::vector<int> CoverageOrder(int n) {
  std::vector<int> order;
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  for (int i = 0; i < (1 << bits); ++i) {
    int reversed = 0;
    for (int b = 0; b < bits; ++b) reversed |= ((i >> b) & 1) << (bits - 1 - b);
    if (reversed < n) order.push_back(reversed);
  }
  return order;
}

namespace {

// Times the points of one kind in CoverageOrder until `deadline` (absl::InfiniteFuture() = all of them)
// and appends their table points to `result` in grid order. `time_point(point, &scratch)` appends a grid
// point's table points to scratch.table; `describe(point)` names it in the progress log.
template <typename Point, typename TimeFn, typename DescribeFn>
absl::Status SweepKind(const std::string& kind, const std::vector<Point>& points, absl::Time deadline, absl::Time start,
                       std::ostream* log, TimeFn time_point, DescribeFn describe, CalibrationResult* result) {
  std::vector<CalibrationResult> timed_points(points.size());
  int timed = 0;
  for (int i : CoverageOrder(static_cast<int>(points.size()))) {
    if (absl::Now() > deadline) break;
    KVSIM_RETURN_IF_ERROR(time_point(points[i], &timed_points[i]));
    ++timed;
    const proto::CalibrationTable& t = timed_points[i].table;
    if (log != nullptr && t.points_size() > 0) {
      *log << absl::StrFormat("[%6.1f s] %s -> median %.1f us\n", absl::ToDoubleSeconds(absl::Now() - start),
                              describe(points[i]), t.points(0).median_ns() / 1e3);
    }
  }
  for (const CalibrationResult& r : timed_points) result->table.mutable_points()->MergeFrom(r.table.points());
  if (timed < static_cast<int>(points.size())) {
    result->notes.push_back(absl::StrFormat("%s: budget reached after %d of %d points (an even subset of the grid)",
                                            kind, timed, points.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalibrationResult> RunCalibration(const CalibrationOptions& options, std::ostream* log) {
  if (!CudaDeviceAvailable()) {
    return absl::UnavailableError(
        "kvsim calibrate needs a CUDA GPU: none is usable here (or this kvsim was "
        "built without CUDA)");
  }
  KVSIM_ASSIGN_OR_RETURN(DeviceProperties props, QueryDevice(0));
  CalibrationResult result;
  proto::CalibrationHeader& h = *result.table.mutable_header();
  h.set_gpu_name(props.name);
  h.set_driver_version(DriverVersionText(props.driver_version));
  h.set_cuda_version(VersionText(props.runtime_version));
  h.set_clocks(ClockText(props));
  h.set_tool_revision(options.tool_revision.empty() ? "kvsim" : options.tool_revision);
  h.set_date(absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()));
  h.set_source(absl::StrCat("kvsim calibrate (", options.full ? "full" : "coarse",
                            " grid, KV pools rotated over >= 4x L2, random page order, ", options.warmup,
                            " warm-up runs, CUDA events)"));
  const absl::Time start = absl::Now();
  if (options.validate) {
    KVSIM_RETURN_IF_ERROR(ValidateKernels(options.seed, &result.notes));
  } else {
    result.notes.push_back("validation against the float64 reference SKIPPED (--validate=false)");
  }
  const CalibrationGrid grid = MakeCalibrationGrid(options.full);
  std::mt19937_64 rng(options.seed);
  if (Wanted(options, "host_device_copy")) KVSIM_RETURN_IF_ERROR(TimeCopies(grid.copy_bytes, options, &result));
  // With a budget, each kind gets the time left in proportion to its share of the points left, so that a
  // cut grid still covers every kind (unused time passes on to the next kind; prefill, whose points cost
  // the most, comes last).
  const absl::Time end =
      options.budget_seconds > 0 ? start + absl::Seconds(options.budget_seconds) : absl::InfiniteFuture();
  size_t points_left = (Wanted(options, "gemm") ? grid.gemm.size() : 0) +
                       (Wanted(options, "prefill_attention") ? grid.prefill.size() : 0) +
                       (Wanted(options, "decode_attention") ? grid.decode.size() : 0);
  auto deadline = [&](size_t points) {
    if (end == absl::InfiniteFuture()) return end;
    const absl::Time now = absl::Now();
    const absl::Time d = now + (end - now) * (static_cast<double>(points) / std::max<size_t>(points_left, 1));
    points_left -= points;
    return d;
  };
  if (Wanted(options, "gemm")) {
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<BlasLtGemm> gemm, BlasLtGemm::Create());
    KVSIM_RETURN_IF_ERROR(SweepKind(
        "gemm", grid.gemm, deadline(grid.gemm.size()), start, log,
        [&](const GemmPoint& pt, CalibrationResult* out) { return TimeGemm(pt, *gemm, options, props, rng, out); },
        [](const GemmPoint& pt) {
          return absl::StrFormat("gemm %s T=%d %dx%d", pt.name, pt.tokens, pt.in_features, pt.out_features);
        },
        &result));
  }
  if (Wanted(options, "decode_attention")) {
    KVSIM_RETURN_IF_ERROR(SweepKind(
        "decode_attention", grid.decode, deadline(grid.decode.size()), start, log,
        [&](const DecodePoint& pt, CalibrationResult* out) { return TimeDecode(pt, options, props, rng, out); },
        [](const DecodePoint& pt) {
          return absl::StrFormat("decode %s g%d B=%d L=%d S=%d gqa=%d page=%d", CalibrationDtypeName(pt.dtype),
                                 pt.group_size, pt.batch, pt.context_tokens, pt.num_segments, pt.gqa, pt.page_size);
        },
        &result));
  }
  if (Wanted(options, "prefill_attention")) {
    KVSIM_RETURN_IF_ERROR(SweepKind(
        "prefill_attention", grid.prefill, deadline(grid.prefill.size()), start, log,
        [&](const PrefillPoint& pt, CalibrationResult* out) { return TimePrefill(pt, options, props, rng, out); },
        [](const PrefillPoint& pt) {
          return absl::StrFormat("prefill B=%d chunk=%d prefix=%d S=%d", pt.batch, pt.chunk_tokens, pt.prefix_tokens,
                                 pt.prefix_segments);
        },
        &result));
  }
  result.notes.push_back(
      absl::StrFormat("%d rows in %.1f s", result.table.points_size(), absl::ToDoubleSeconds(absl::Now() - start)));
  KVSIM_RETURN_IF_ERROR(NormaliseCalibrationPoints("kvsim calibrate", &result.table));
  return result;
}

}  // namespace kvsim
