#include "cost_models/synthetic_table.h"

#include "absl/strings/str_cat.h"
#include "cost_models/calibration_table.h"
#include "cost_models/kernel_roofline.h"
#include "cost_models/roofline.h"
#include "util/status_macros.h"
#include "util/version.h"

namespace kvsim {
namespace {

std::vector<int64_t> Powers(int64_t from, int64_t to, int64_t factor = 2) {
  std::vector<int64_t> v;
  for (int64_t x = from; x <= to; x *= factor) v.push_back(x);
  return v;
}

}  // namespace

absl::StatusOr<proto::CalibrationTable> SynthesizeTable(const proto::ExperimentConfig& config,
                                                        const SynthOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(RooflineParams p, MakeRooflineParams(config));
  for (const std::string& dtype : options.kv_dtypes) {
    if (CalibrationDTypeBits(dtype) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown KV dtype '", dtype, "'"));
    }
  }
  proto::CalibrationTable table;
  proto::CalibrationHeader* h = table.mutable_header();
  h->set_gpu_name(config.device().name());
  h->set_synthetic_from_datasheet(true);
  h->set_tool_revision(absl::StrCat("kvsim ", kKvsimVersion));
  h->set_source(absl::StrCat("kvsim costmodel synth: kernel roofline of ", config.model().name(), " shapes (TP ", p.tp,
                             ") on ", config.device().source(), " figures, + ", options.launch_ns, " ns per kernel"));
  auto add = [&](proto::KernelKind kind, const std::string& dtype, auto set_shape) {
    proto::CalibrationPoint* point = table.add_points();
    point->set_kind(kind);
    point->set_dtype(dtype);
    set_shape(point->mutable_shape());
    FillCalibrationDefaults(point);
    const double seconds = KernelRooflineSeconds(KernelQueryFromPoint(*point), p.rates, true);
    point->set_median_ns(seconds * 1e9 + options.launch_ns);
  };
  const int32_t page = config.cache().block_tokens();
  auto attention = [&p, page](proto::KernelShape* s) {
    s->set_num_heads(p.heads);
    s->set_num_kv_heads(p.kv_heads);
    s->set_head_dim(p.head_dim);
    s->set_page_size(page);
  };
  for (const std::string& dtype : options.kv_dtypes) {
    for (int64_t batch : Powers(1, 256)) {
      for (int64_t context : Powers(16, 131072)) {
        add(proto::KERNEL_KIND_DECODE_ATTENTION, dtype, [&](proto::KernelShape* s) {
          attention(s);
          s->set_batch(batch);
          s->set_query_tokens(1);
          s->set_context_tokens(context);
        });
      }
    }
  }
  std::vector<int64_t> prefixes = Powers(1024, 131072);
  prefixes.insert(prefixes.begin(), 0);
  for (int64_t chunk : Powers(16, 8192)) {
    for (int64_t prefix : prefixes) {
      add(proto::KERNEL_KIND_PREFILL_ATTENTION, "bf16", [&](proto::KernelShape* s) {
        attention(s);
        s->set_query_tokens(chunk);
        s->set_context_tokens(prefix);
      });
    }
  }
  for (int64_t batch : Powers(1, 256)) {
    for (int64_t segments : {2, 4, 8, 16, 64}) {
      add(proto::KERNEL_KIND_SEGMENT_MERGE, "bf16", [&](proto::KernelShape* s) {
        s->set_batch(batch);
        s->set_num_segments(segments);
        s->set_num_heads(p.heads);
        s->set_head_dim(p.head_dim);
      });
    }
  }
  const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim, hidden = p.hidden;
  struct Gemm {
    proto::KernelKind kind;
    int64_t in, out;
  };
  const std::string weights = p.weight_bytes_per_element == 2   ? "bf16"
                              : p.weight_bytes_per_element == 1 ? "fp8"
                              : p.weight_bytes_per_element == 4 ? "fp32"
                                                                : "int4";
  for (const Gemm& g :
       {Gemm{proto::KERNEL_KIND_LINEAR_GEMM, hidden, q + 2 * kv}, Gemm{proto::KERNEL_KIND_LINEAR_GEMM, q, hidden},
        Gemm{proto::KERNEL_KIND_MLP_GEMM, hidden, 2 * p.intermediate},
        Gemm{proto::KERNEL_KIND_MLP_GEMM, p.intermediate, hidden},
        Gemm{proto::KERNEL_KIND_KV_PROJECTION, hidden, 2 * kv},
        Gemm{proto::KERNEL_KIND_LINEAR_GEMM, hidden, p.vocab}}) {
    for (int64_t tokens : Powers(1, 16384)) {
      add(g.kind, weights, [&](proto::KernelShape* s) {
        s->set_query_tokens(tokens);
        s->set_in_features(g.in);
        s->set_out_features(g.out);
      });
    }
  }
  if (p.tp > 1) {
    for (int64_t tokens : Powers(1, 16384)) {
      add(proto::KERNEL_KIND_ALL_REDUCE, "bf16", [&](proto::KernelShape* s) {
        s->set_bytes(tokens * hidden * 2);
        s->set_num_gpus(p.tp);
      });
    }
  }
  for (int64_t bytes : Powers(4096, int64_t{1} << 30, 4)) {
    add(proto::KERNEL_KIND_HOST_DEVICE_COPY, "bf16", [&](proto::KernelShape* s) { s->set_bytes(bytes); });
  }
  return table;
}

}  // namespace kvsim
