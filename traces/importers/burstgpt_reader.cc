#include "traces/importers/burstgpt_reader.h"

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "traces/text/csv_source.h"
#include "traces/text/import_reader.h"
#include "traces/text/parse_util.h"
#include "traces/text/text_detect.h"
#include "traces/trace_format.h"
#include "util/spilled_id_map.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// FNV-1a over the bytes, top bit cleared: a stable (build- and run-independent) id for text session ids.
int64_t TextId(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return static_cast<int64_t>(h >> 1);
}

class BurstGptSource final : public CsvSource {
 public:
  static absl::StatusOr<std::unique_ptr<BurstGptSource>> Create(std::unique_ptr<CsvReader> csv) {
    std::unique_ptr<BurstGptSource> s(new BurstGptSource(std::move(csv)));
    KVSIM_ASSIGN_OR_RETURN(s->timestamp_, s->RequiredColumn("Timestamp"));
    KVSIM_ASSIGN_OR_RETURN(s->model_, s->RequiredColumn("Model"));
    KVSIM_ASSIGN_OR_RETURN(s->request_, s->RequiredColumn("Request tokens"));
    KVSIM_ASSIGN_OR_RETURN(s->response_, s->RequiredColumn("Response tokens"));
    KVSIM_ASSIGN_OR_RETURN(s->log_type_, s->RequiredColumn("Log Type"));
    s->session_ = s->OptionalColumn("Session ID");
    return s;
  }

  bool has_request_ids() const override { return true; }  // the row index, which parent_id refers to

  std::vector<std::string> warnings() const override {
    if (num_failed_ == 0) return {};
    return {absl::StrCat(path(), ": ", num_failed_, " rows with 0 response tokens kept and marked failed")};
  }

 protected:
  absl::Status ParseFields(absl::Span<const absl::string_view> f, Request* r) override {
    KVSIM_RETURN_IF_ERROR(CsvDecimalNs(f[timestamp_], "Timestamp", 1'000'000'000, &r->arrival_ns));
    r->model = std::string(absl::StripAsciiWhitespace(f[model_]));
    KVSIM_RETURN_IF_ERROR(CsvInt(f[request_], "Request tokens", 1, kMaxTraceTokens, &r->input_tokens));
    KVSIM_RETURN_IF_ERROR(CsvInt(f[response_], "Response tokens", 0, kMaxTraceTokens, &r->output_tokens));
    const absl::string_view log_type = absl::StripAsciiWhitespace(f[log_type_]);
    if (log_type == "Conversation log") {
      r->type = proto::REQUEST_TYPE_CONVERSATION;
    } else if (log_type == "API log") {
      r->type = proto::REQUEST_TYPE_API;
    } else {
      return CsvFieldError("Log Type", "\"Conversation log\" or \"API log\"", f[log_type_]);
    }
    if (r->output_tokens == 0) {
      r->failed = true;
      ++num_failed_;
    }
    if (session_ >= 0) {
      const absl::string_view text = absl::StripAsciiWhitespace(f[session_]);
      if (!text.empty()) {
        int64_t id;
        if (!ParseInt64(text, &id) || id < 0) id = TextId(text);
        r->session_id = id;
        Session session;  // a new session if the id was not seen
        KVSIM_RETURN_IF_ERROR(sessions_.Find(static_cast<uint64_t>(id), &session).status());
        r->turn = ++session.turns;
        r->parent_id = session.last_request;
        session.last_request = static_cast<int64_t>(row_);
        KVSIM_RETURN_IF_ERROR(sessions_.Set(static_cast<uint64_t>(id), session));
      }
    }
    r->request_id = row_++;
    return absl::OkStatus();
  }

 private:
  using CsvSource::CsvSource;
  struct Session {
    int32_t turns = 0;
    int64_t last_request = -1;
  };
  int timestamp_ = -1, model_ = -1, request_ = -1, response_ = -1, log_type_ = -1, session_ = -1;
  uint64_t row_ = 0;
  int64_t num_failed_ = 0;
  SpilledIdMap<Session> sessions_;  // by session id, in memory that does not grow with the trace
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> OpenBurstGptTrace(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<BurstGptSource> source, BurstGptSource::Create(std::move(csv)));
  return MakeImportReader(std::move(source), TraceInfo{path, "burstgpt", 0}, options);
}

bool LooksLikeBurstGpt(absl::string_view head) {
  return HasColumns(CsvHeaderFields(head), {"Timestamp", "Request tokens", "Response tokens"});
}

KVSIM_REGISTER_TRACE_FORMAT(
    burstgpt, {
                  .name = "burstgpt",
                  .description = "BurstGPT CSV: Timestamp (s), Model, Request/Response tokens, Log Type, Session ID",
                  .detect_order = 55,
                  .detect = LooksLikeBurstGpt,
                  .open = OpenBurstGptTrace,
              });

}  // namespace kvsim
