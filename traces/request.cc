#include "traces/request.h"

#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "util/mix64.h"

namespace kvsim {
namespace {

template <typename T>
void Put(const T& value, std::string* out) {
  static_assert(std::is_trivially_copyable_v<T>);
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
void PutVector(const std::vector<T>& values, std::string* out) {
  Put<uint64_t>(values.size(), out);
  out->append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

void PutString(const std::string& text, std::string* out) {
  Put<uint64_t>(text.size(), out);
  out->append(text);
}

// Reads from bytes in memory; ok() turns false at the first read past their end.
class Cursor {
 public:
  Cursor(absl::string_view data, size_t pos) : data_(data), pos_(pos) {}
  template <typename T>
  void Get(T* value) {
    if (!Take(sizeof(T))) return;
    std::memcpy(value, data_.data() + pos_ - sizeof(T), sizeof(T));
  }
  template <typename T>
  void GetVector(std::vector<T>* values) {
    uint64_t n = 0;
    Get(&n);
    if (!ok_ || n > (data_.size() - pos_) / sizeof(T)) {
      ok_ = false;
      return;
    }
    values->resize(n);
    std::memcpy(values->data(), data_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
  }
  void GetString(std::string* text) {
    uint64_t n = 0;
    Get(&n);
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return;
    }
    text->assign(data_.data() + pos_, n);
    pos_ += n;
  }
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }

 private:
  bool Take(size_t n) {
    if (!ok_ || n > data_.size() - pos_) return ok_ = false;
    pos_ += n;
    return true;
  }
  absl::string_view data_;
  size_t pos_;
  bool ok_ = true;
};

}  // namespace

void AppendRequestBytes(const Request& r, std::string* out) {
  Put(r.request_id, out);
  Put(r.arrival_ns, out);
  Put(r.session_id, out);
  Put(r.parent_id, out);
  Put(r.turn, out);
  Put(r.input_tokens, out);
  Put(r.output_tokens, out);
  Put(r.block_tokens, out);
  Put(static_cast<int32_t>(r.type), out);
  Put(static_cast<uint8_t>(r.failed), out);
  PutVector(r.block_hashes, out);
  PutVector(r.block_token_counts, out);
  PutString(r.model, out);
  Put<uint64_t>(r.tool_calls.size(), out);
  for (const ToolCall& call : r.tool_calls) {
    PutString(call.name, out);
    Put(call.duration_ns, out);
  }
}

bool ReadRequestBytes(absl::string_view data, size_t* pos, Request* r) {
  Cursor in(data, *pos);
  int32_t type = 0;
  uint8_t failed = 0;
  in.Get(&r->request_id);
  in.Get(&r->arrival_ns);
  in.Get(&r->session_id);
  in.Get(&r->parent_id);
  in.Get(&r->turn);
  in.Get(&r->input_tokens);
  in.Get(&r->output_tokens);
  in.Get(&r->block_tokens);
  in.Get(&type);
  in.Get(&failed);
  in.GetVector(&r->block_hashes);
  in.GetVector(&r->block_token_counts);
  in.GetString(&r->model);
  uint64_t calls = 0;
  in.Get(&calls);
  r->tool_calls.clear();
  for (uint64_t i = 0; in.ok() && i < calls; ++i) {
    ToolCall call;
    in.GetString(&call.name);
    in.Get(&call.duration_ns);
    r->tool_calls.push_back(std::move(call));
  }
  if (!in.ok()) return false;
  r->type = static_cast<proto::RequestType>(type);
  r->failed = failed != 0;
  *pos = in.pos();
  return true;
}

void Request::Clear() {
  request_id = 0;
  arrival_ns = 0;
  session_id = -1;
  parent_id = -1;
  turn = 0;
  input_tokens = 0;
  output_tokens = 0;
  block_tokens = 0;
  block_hashes.clear();
  block_token_counts.clear();
  type = proto::REQUEST_TYPE_UNSPECIFIED;
  failed = false;
  model.clear();
  tool_calls.clear();
}

int64_t BlockStartTokens(const Request& request, int64_t k) {
  if (request.block_token_counts.empty()) {
    const int64_t start = k * static_cast<int64_t>(request.block_tokens);
    return start < request.input_tokens ? start : request.input_tokens;
  }
  int64_t start = 0;
  for (int64_t j = 0; j < k; ++j) start += request.block_token_counts[j];
  return start;
}

absl::Status CheckBlockTokenCounts(const Request& request) {
  if (request.block_token_counts.empty()) return absl::OkStatus();
  if (request.block_token_counts.size() != request.block_hashes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("block_token_counts: ", request.block_token_counts.size(),
                                                   " counts for ", request.block_hashes.size(), " block hashes"));
  }
  int64_t sum = 0;
  for (size_t k = 0; k < request.block_token_counts.size(); ++k) {
    if (request.block_token_counts[k] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("block_token_counts[", k, "]: expected > 0, got ", request.block_token_counts[k]));
    }
    sum += request.block_token_counts[k];
  }
  if (sum != request.input_tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_token_counts: sum ", sum, " differs from input_tokens ", request.input_tokens));
  }
  return absl::OkStatus();
}

absl::Status CheckRequestLimits(const Request& request, int64_t block_tokens) {
  const auto too_many = [&](absl::string_view field, int64_t value, int64_t limit, absl::string_view unit) {
    return absl::InvalidArgumentError(absl::StrCat("request ", request.request_id, ": ", field, " ", value,
                                                   " exceeds the limit of ", limit, " ", unit, " per request"));
  };
  if (request.input_tokens < 0 || request.input_tokens > kMaxRequestTokens) {
    if (request.input_tokens < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("request ", request.request_id, ": input_tokens must be >= 0, got ", request.input_tokens));
    }
    // What it would cost: one block (an 8-byte id and the simulator's entry) per block_tokens tokens.
    return absl::InvalidArgumentError(
        absl::StrCat("request ", request.request_id, ": input_tokens ", request.input_tokens, " exceeds the limit of ",
                     kMaxRequestTokens, " tokens per request (it would allocate ",
                     NumBlocks(request.input_tokens, block_tokens), " blocks of ", block_tokens, " tokens)"));
  }
  if (request.output_tokens < 0 || request.output_tokens > kMaxRequestTokens) {
    if (request.output_tokens < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("request ", request.request_id, ": output_tokens must be >= 0, got ", request.output_tokens));
    }
    return too_many("output_tokens", request.output_tokens, kMaxRequestTokens, "tokens");
  }
  const int64_t blocks = PromptBlocks(request, block_tokens);
  if (blocks > kMaxRequestBlocks) {
    return absl::InvalidArgumentError(absl::StrCat("request ", request.request_id, ": ", blocks,
                                                   " blocks exceed the limit of ", kMaxRequestBlocks,
                                                   " blocks per request (raise the block size)"));
  }
  return absl::OkStatus();
}

void AssignFreshBlockHashes(int32_t block_tokens, Request* request) {
  const int64_t n = NumBlocks(request->input_tokens, block_tokens);
  request->block_tokens = block_tokens;
  request->block_hashes.resize(n);
  request->block_token_counts.clear();
  const uint64_t base = Mix64(request->request_id);
  for (int64_t k = 0; k < n; ++k) {
    request->block_hashes[k] = Mix64(base ^ static_cast<uint64_t>(k)) | (uint64_t{1} << 63);
  }
}

void RequestToProto(const Request& request, proto::TraceRecord* record) {
  record->Clear();
  record->set_request_id(request.request_id);
  record->set_arrival_ns(request.arrival_ns);
  if (request.session_id >= 0) record->set_session_id(request.session_id);
  if (request.parent_id >= 0) record->set_parent_id(static_cast<uint64_t>(request.parent_id));
  record->set_turn(request.turn);
  record->set_input_tokens(request.input_tokens);
  record->set_output_tokens(request.output_tokens);
  record->mutable_block_hashes()->Assign(request.block_hashes.begin(), request.block_hashes.end());
  record->mutable_block_token_counts()->Assign(request.block_token_counts.begin(), request.block_token_counts.end());
  record->set_type(request.type);
  for (const ToolCall& call : request.tool_calls) {
    proto::ToolCall* out = record->add_tool_calls();
    out->set_name(call.name);
    out->set_duration_ns(call.duration_ns);
  }
  record->set_model(request.model);
  record->set_failed(request.failed);
}

void RequestFromProto(const proto::TraceRecord& record, int32_t block_tokens, Request* request) {
  request->Clear();
  request->request_id = record.request_id();
  request->arrival_ns = record.arrival_ns();
  request->session_id = record.has_session_id() ? record.session_id() : -1;
  request->parent_id = record.has_parent_id() ? static_cast<int64_t>(record.parent_id()) : -1;
  request->turn = record.turn();
  request->input_tokens = record.input_tokens();
  request->output_tokens = record.output_tokens();
  request->block_tokens = record.block_hashes_size() > 0 ? block_tokens : 0;
  request->block_hashes.assign(record.block_hashes().begin(), record.block_hashes().end());
  request->block_token_counts.assign(record.block_token_counts().begin(), record.block_token_counts().end());
  request->type = record.type();
  for (const proto::ToolCall& call : record.tool_calls()) {
    request->tool_calls.push_back({call.name(), call.duration_ns()});
  }
  request->model = record.model();
  request->failed = record.failed();
}

}  // namespace kvsim
