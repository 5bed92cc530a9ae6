#include "traces/importers/azure_reader.h"

#include "traces/text/csv_source.h"
#include "traces/text/import_reader.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

class AzureSource final : public CsvSource {
 public:
  static absl::StatusOr<std::unique_ptr<AzureSource>> Create(std::unique_ptr<CsvReader> csv) {
    std::unique_ptr<AzureSource> source(new AzureSource(std::move(csv)));
    KVSIM_ASSIGN_OR_RETURN(source->timestamp_, source->RequiredColumn("TIMESTAMP"));
    KVSIM_ASSIGN_OR_RETURN(source->context_, source->RequiredColumn("ContextTokens"));
    KVSIM_ASSIGN_OR_RETURN(source->generated_, source->RequiredColumn("GeneratedTokens"));
    return source;
  }

 protected:
  absl::Status ParseFields(absl::Span<const absl::string_view> fields, Request* request) override {
    if (!ParseDateTimeNs(fields[timestamp_], &request->arrival_ns)) {
      return CsvFieldError("TIMESTAMP", "a time 'YYYY-MM-DD HH:MM:SS.fffffff'", fields[timestamp_]);
    }
    KVSIM_RETURN_IF_ERROR(CsvInt(fields[context_], "ContextTokens", 1, kMaxTraceTokens, &request->input_tokens));
    return CsvInt(fields[generated_], "GeneratedTokens", 0, kMaxTraceTokens, &request->output_tokens);
  }

 private:
  using CsvSource::CsvSource;
  int timestamp_ = -1;
  int context_ = -1;
  int generated_ = -1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenAzureTrace(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<AzureSource> source, AzureSource::Create(std::move(csv)));
  return MakeImportReader(std::move(source), TraceInfo{path, "azure", 0}, options);
}

bool LooksLikeAzure(absl::string_view head) {
  return HasColumns(CsvHeaderFields(head), {"TIMESTAMP", "ContextTokens", "GeneratedTokens"});
}

KVSIM_REGISTER_TRACE_FORMAT(
    azure, {
               .name = "azure",
               .description = "Azure LLM inference CSV (2023, 2024): TIMESTAMP, ContextTokens, GeneratedTokens",
               .detect_order = 50,
               .detect = LooksLikeAzure,
               .open = OpenAzureTrace,
           });

}  // namespace kvsim
