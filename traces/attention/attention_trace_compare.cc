// attention_trace_compare A B [--rel_tol=X]: whether two traces hold the same recording, e.g. one written by
// `kvsim record` and one by tools/record_attention.py from the same model and prompts.
//
// Layout and metadata must be equal exactly: model, layer/head counts, head_dim, dtype, rope, kept layers and
// KV heads, sample count, and per sample prompt_len, decode steps, query_start, token ids, boundaries, head
// order and whether column sums are stored. Tensors are compared row by row (a position's head_dim vector of
// keys, values or queries; a query head's column sums over the prompt): every entry of a row must satisfy
// |a - b| <= rel_tol * max(max |a_row|, max |b_row|), so a row of small entries is judged against its own
// scale. Prints one line per tensor kind with the largest relative error seen and exits 0 when everything
// agrees; otherwise names the first disagreement (sample, layer, KV head, tensor, row, entry) and exits 1.
// Unreadable files exit 2 with the reader's error.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "traces/attention/attention_trace_io.h"

namespace kvsim {
namespace {

// The first difference of two equal-meaning fields, or "".
template <typename T>
std::string Differs(const std::string& what, const T& a, const T& b) {
  if (a == b) return "";
  return absl::StrCat(what, " differs: ", a, " vs ", b);
}

template <typename T>
std::string DiffersList(const std::string& what, const std::vector<T>& a, const std::vector<T>& b) {
  if (a == b) return "";
  return absl::StrCat(what, " differ: [", absl::StrJoin(a, ","), "] vs [", absl::StrJoin(b, ","), "]");
}

std::string HeaderDifference(const AttentionTraceHeader& a, const AttentionTraceHeader& b) {
  for (const std::string& d : {
           a.model == b.model ? "" : absl::StrCat("model differs: '", a.model, "' vs '", b.model, "'"),
           Differs("num_layers", a.num_layers, b.num_layers),
           Differs("num_query_heads", a.num_query_heads, b.num_query_heads),
           Differs("num_kv_heads", a.num_kv_heads, b.num_kv_heads),
           Differs("head_dim", a.head_dim, b.head_dim),
           Differs("dtype", static_cast<int>(a.dtype), static_cast<int>(b.dtype)),
           Differs("rope_base", a.rope.base, b.rope.base),
           Differs("rope_scaling", static_cast<int>(a.rope.scaling), static_cast<int>(b.rope.scaling)),
           Differs("rope_scaling_factor", a.rope.scaling_factor, b.rope.scaling_factor),
           Differs("synthetic", static_cast<int>(a.synthetic), static_cast<int>(b.synthetic)),
           DiffersList("kept_layers", a.kept_layers, b.kept_layers),
           DiffersList("kept_kv_heads", a.kept_kv_heads, b.kept_kv_heads),
       }) {
    if (!d.empty()) return d;
  }
  return "";
}

std::string SampleDifference(const AttentionSample& a, const AttentionSample& b) {
  for (const std::string& d : {
           Differs("prompt_len", a.prompt_len, b.prompt_len),
           Differs("decode_steps", a.num_decode_steps, b.num_decode_steps),
           Differs("query_start", a.query_start, b.query_start),
           DiffersList("token_ids", a.token_ids, b.token_ids),
           DiffersList("boundaries", a.boundaries, b.boundaries),
           Differs("heads", a.heads.size(), b.heads.size()),
       }) {
    if (!d.empty()) return d;
  }
  for (size_t h = 0; h < a.heads.size(); ++h) {
    const std::string where = absl::StrCat("head ", h, " ");
    for (const std::string& d : {
             Differs(where + "layer", a.heads[h].layer, b.heads[h].layer),
             Differs(where + "kv_head", a.heads[h].kv_head, b.heads[h].kv_head),
             Differs(where + "has column_sums", static_cast<int>(a.heads[h].column_sums.empty()),
                     static_cast<int>(b.heads[h].column_sums.empty())),
         }) {
      if (!d.empty()) return d;
    }
  }
  return "";
}

// Compares `a` and `b` (equal sizes, rows of `row` entries); updates worst[name]; returns the first entry out
// of tolerance as a message, or "".
std::string CompareRows(const std::string& name, const std::vector<float>& a, const std::vector<float>& b, int64_t row,
                        double rel_tol, std::map<std::string, double>& worst) {
  if (a.size() != b.size() || row <= 0) return absl::StrCat(name, ": ", a.size(), " vs ", b.size(), " entries");
  double& w = worst[name];
  for (size_t start = 0; start < a.size(); start += row) {
    double scale = 0;
    for (size_t i = start; i < start + row; ++i)
      scale = std::max({scale, std::fabs(a[i] * 1.0), std::fabs(b[i] * 1.0)});
    for (size_t i = start; i < start + row; ++i) {
      const double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
      const double rel = scale > 0 ? diff / scale : 0.0;
      w = std::max(w, rel);
      if (!(diff <= rel_tol * scale)) {  // NaN fails too
        return absl::StrFormat("%s row %d entry %d: %.9g vs %.9g (%.3g of the row's largest magnitude %.6g > %g)", name,
                               (start / row), i - start, a[i], b[i], rel, scale, rel_tol);
      }
    }
  }
  return "";
}

int Run(int argc, char** argv) {
  std::vector<std::string> files;
  double rel_tol = 1e-4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--rel_tol=")) {
      if (!absl::SimpleAtod(arg.substr(10), &rel_tol) || !(rel_tol >= 0)) {
        std::cerr << "attention_trace_compare: --rel_tol: '" << arg.substr(10) << "' is not a number >= 0\n";
        return 2;
      }
    } else {
      files.push_back(arg);
    }
  }
  if (files.size() != 2) {
    std::cerr << "usage: attention_trace_compare A.kvat B.kvat [--rel_tol=1e-4]\n";
    return 2;
  }
  std::unique_ptr<AttentionTraceReader> readers[2];
  for (int f = 0; f < 2; ++f) {
    auto reader = AttentionTraceReader::Open(files[f]);
    if (!reader.ok()) {
      std::cerr << reader.status() << "\n";
      return 2;
    }
    readers[f] = std::move(*reader);
  }
  const AttentionTraceHeader &ha = readers[0]->header(), &hb = readers[1]->header();
  std::string diff = HeaderDifference(ha, hb);
  if (diff.empty()) diff = Differs("samples", readers[0]->num_samples(), readers[1]->num_samples());
  if (!diff.empty()) {
    std::cout << "header: " << diff << "\n";
    return 1;
  }
  std::map<std::string, double> worst;
  for (int64_t s = 0; s < readers[0]->num_samples(); ++s) {
    auto a = readers[0]->ReadSample(s), b = readers[1]->ReadSample(s);
    for (const auto* x : {&a, &b}) {
      if (!x->ok()) {
        std::cerr << x->status() << "\n";
        return 2;
      }
    }
    diff = SampleDifference(*a, *b);
    if (!diff.empty()) {
      std::cout << "sample " << s << ": " << diff << "\n";
      return 1;
    }
    for (size_t h = 0; h < a->heads.size(); ++h) {
      const HeadTensors &x = a->heads[h], &y = b->heads[h];
      for (const std::string& d : {
               CompareRows("keys", x.keys, y.keys, ha.head_dim, rel_tol, worst),
               CompareRows("values", x.values, y.values, ha.head_dim, rel_tol, worst),
               CompareRows("queries", x.queries, y.queries, ha.head_dim, rel_tol, worst),
               x.column_sums.empty()
                   ? std::string()
                   : CompareRows("column_sums", x.column_sums, y.column_sums, a->prompt_len, rel_tol, worst),
           }) {
        if (!d.empty()) {
          std::cout << "sample " << s << " layer " << x.layer << " kv_head " << x.kv_head << ": " << d << "\n";
          return 1;
        }
      }
    }
  }
  std::cout << "samples " << readers[0]->num_samples() << "\n";
  for (const auto& [name, w] : worst) std::cout << absl::StrFormat("%s max_rel_error %.3g\n", name, w);
  std::cout << "agree within " << rel_tol << "\n";
  return 0;
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) { return kvsim::Run(argc, argv); }
