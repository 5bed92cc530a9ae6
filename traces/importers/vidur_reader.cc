#include "traces/importers/vidur_reader.h"

#include "traces/text/csv_source.h"
#include "traces/text/import_reader.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

class VidurSource final : public CsvSource {
 public:
  static absl::StatusOr<std::unique_ptr<VidurSource>> Create(std::unique_ptr<CsvReader> csv) {
    std::unique_ptr<VidurSource> s(new VidurSource(std::move(csv)));
    KVSIM_ASSIGN_OR_RETURN(s->arrived_, s->RequiredColumn("arrived_at"));
    KVSIM_ASSIGN_OR_RETURN(s->prefill_, s->RequiredColumn("num_prefill_tokens"));
    KVSIM_ASSIGN_OR_RETURN(s->decode_, s->RequiredColumn("num_decode_tokens"));
    return s;
  }

 protected:
  absl::Status ParseFields(absl::Span<const absl::string_view> f, Request* r) override {
    KVSIM_RETURN_IF_ERROR(CsvDecimalNs(f[arrived_], "arrived_at", 1'000'000'000, &r->arrival_ns));
    KVSIM_RETURN_IF_ERROR(CsvInt(f[prefill_], "num_prefill_tokens", 1, kMaxTraceTokens, &r->input_tokens));
    return CsvInt(f[decode_], "num_decode_tokens", 0, kMaxTraceTokens, &r->output_tokens);
  }

 private:
  using CsvSource::CsvSource;
  int arrived_ = -1, prefill_ = -1, decode_ = -1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenVidurTrace(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<VidurSource> source, VidurSource::Create(std::move(csv)));
  return MakeImportReader(std::move(source), TraceInfo{path, "vidur", 0}, options);
}

bool LooksLikeVidur(absl::string_view head) {
  return HasColumns(CsvHeaderFields(head), {"arrived_at", "num_prefill_tokens", "num_decode_tokens"});
}

KVSIM_REGISTER_TRACE_FORMAT(vidur,
                            {
                                .name = "vidur",
                                .description = "Vidur CSV: arrived_at (s), num_prefill_tokens, num_decode_tokens",
                                .detect_order = 60,
                                .detect = LooksLikeVidur,
                                .open = OpenVidurTrace,
                            });

}  // namespace kvsim
