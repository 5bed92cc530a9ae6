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

}  // namespace

RequestSpill::~RequestSpill() {
  if (file_ != nullptr) std::fclose(file_);
}

int64_t RequestSpill::Append(const Request& r, bool unique_blocks, const RequestKv& kv) {
  const int64_t offset = size_;
  const size_t start = buffer_.size();
  Put<uint64_t>(0, &buffer_);  // the record's length, set below
  Put(static_cast<uint8_t>(unique_blocks), &buffer_);
  Put(kv, &buffer_);
  AppendRequestBytes(r, &buffer_);
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
  uint8_t unique = 0;
  size_t pos = sizeof(unique) + sizeof(*kv);
  if (read_buffer_.size() < pos ||
      !ReadRequestBytes(absl::string_view(read_buffer_.data(), read_buffer_.size()), &pos, r)) {
    return absl::InternalError("closed-loop sessions: a record of the requests' spill file is cut short");
  }
  std::memcpy(&unique, read_buffer_.data(), sizeof(unique));
  std::memcpy(kv, read_buffer_.data() + sizeof(unique), sizeof(*kv));
  *unique_blocks = unique != 0;
  return absl::OkStatus();
}

}  // namespace kvsim
