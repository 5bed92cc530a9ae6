#include "sim/serving/request_spill.h"

#include <unistd.h>

#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace kvsim {
namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;

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

// Reads from a record in memory; ok() turns false at the first read past its end.
class Cursor {
 public:
  Cursor(const char* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  void Get(T* value) {
    if (!Take(sizeof(T))) return;
    std::memcpy(value, data_ + pos_ - sizeof(T), sizeof(T));
  }
  template <typename T>
  void GetVector(std::vector<T>* values) {
    uint64_t n = 0;
    Get(&n);
    if (!ok_ || n > (size_ - pos_) / sizeof(T)) {
      ok_ = false;
      return;
    }
    values->resize(n);
    std::memcpy(values->data(), data_ + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
  }
  void GetString(std::string* text) {
    uint64_t n = 0;
    Get(&n);
    if (!ok_ || n > size_ - pos_) {
      ok_ = false;
      return;
    }
    text->assign(data_ + pos_, n);
    pos_ += n;
  }
  bool ok() const { return ok_; }

 private:
  bool Take(size_t n) {
    if (!ok_ || n > size_ - pos_) return ok_ = false;
    pos_ += n;
    return true;
  }
  const char* data_;
  size_t size_, pos_ = 0;
  bool ok_ = true;
};

}  // namespace

RequestSpill::~RequestSpill() {
  if (file_ != nullptr) std::fclose(file_);
}

int64_t RequestSpill::Append(const Request& r, bool unique_blocks, const RequestKv& kv) {
  const int64_t offset = size_;
  const size_t start = buffer_.size();
  Put<uint64_t>(0, &buffer_);  // the record's length, set below
  Put(r.request_id, &buffer_);
  Put(r.arrival_ns, &buffer_);
  Put(r.session_id, &buffer_);
  Put(r.parent_id, &buffer_);
  Put(r.turn, &buffer_);
  Put(r.input_tokens, &buffer_);
  Put(r.output_tokens, &buffer_);
  Put(r.block_tokens, &buffer_);
  Put(static_cast<int32_t>(r.type), &buffer_);
  Put(static_cast<uint8_t>(r.failed), &buffer_);
  Put(static_cast<uint8_t>(unique_blocks), &buffer_);
  Put(kv, &buffer_);
  PutVector(r.block_hashes, &buffer_);
  PutVector(r.block_token_counts, &buffer_);
  PutString(r.model, &buffer_);
  Put<uint64_t>(r.tool_calls.size(), &buffer_);
  for (const ToolCall& call : r.tool_calls) {
    PutString(call.name, &buffer_);
    Put(call.duration_ns, &buffer_);
  }
  const uint64_t length = buffer_.size() - start - sizeof(uint64_t);
  std::memcpy(&buffer_[start], &length, sizeof(length));
  size_ += static_cast<int64_t>(buffer_.size() - start);
  if (buffer_.size() >= kFlushBytes) Flush();
  return offset;
}

void RequestSpill::Flush() {
  if (buffer_.empty()) return;
  if (!failed_ && file_ == nullptr) {
    file_ = std::tmpfile();
    failed_ = file_ == nullptr;
  }
  if (!failed_) failed_ = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size();
  buffer_.clear();
}

absl::Status RequestSpill::Read(int64_t offset, Request* r, bool* unique_blocks, RequestKv* kv) {
  if (!buffer_.empty()) Flush();
  if (failed_ || (file_ != nullptr && std::fflush(file_) != 0)) {
    failed_ = true;
    return absl::InternalError(
        "closed-loop sessions: cannot write the requests' temporary spill file (std::tmpfile, in TMPDIR)");
  }
  if (offset < 0 || offset >= size_ || file_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("request spill: no record at offset ", offset));
  }
  const auto read = [&](int64_t at, size_t n) {
    read_buffer_.resize(n);
    size_t done = 0;
    while (done < n) {
      const ssize_t got = pread(fileno(file_), &read_buffer_[done], n - done, static_cast<off_t>(at + done));
      if (got <= 0) return false;
      done += static_cast<size_t>(got);
    }
    return true;
  };
  uint64_t length = 0;
  if (!read(offset, sizeof(length))) {
    return absl::InternalError("closed-loop sessions: cannot read the requests' temporary spill file");
  }
  std::memcpy(&length, read_buffer_.data(), sizeof(length));
  if (length > static_cast<uint64_t>(size_ - offset) || !read(offset + sizeof(length), length)) {
    return absl::InternalError("closed-loop sessions: cannot read the requests' temporary spill file");
  }
  Cursor in(read_buffer_.data(), read_buffer_.size());
  int32_t type = 0;
  uint8_t failed = 0, unique = 0;
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
  in.Get(&unique);
  in.Get(kv);
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
  if (!in.ok()) return absl::InternalError("closed-loop sessions: a record of the requests' spill file is cut short");
  r->type = static_cast<proto::RequestType>(type);
  r->failed = failed != 0;
  *unique_blocks = unique != 0;
  return absl::OkStatus();
}

}  // namespace kvsim
