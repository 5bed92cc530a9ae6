#include "traces/peer_export.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "traces/request.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status CheckHashes(const std::string& path, int64_t record, const Request& r) {
  if (r.block_hashes.empty()) return absl::OkStatus();
  if (r.block_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": record ", record, ": block_hashes without a block size (block_tokens 0)"));
  }
  const int64_t expected = NumBlocks(r.input_tokens, r.block_tokens);
  if (static_cast<int64_t>(r.block_hashes.size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": record ", record, ": block_hashes: expected ceil(",
                                                   r.input_tokens, " / ", r.block_tokens, ") = ", expected,
                                                   " ids, got ", r.block_hashes.size()));
  }
  return absl::OkStatus();
}

class VidurWriter final : public TraceWriter {
 public:
  absl::Status Open(const std::string& path) {
    KVSIM_RETURN_IF_ERROR(file_.Open(path));
    return file_.Put("arrived_at,num_prefill_tokens,num_decode_tokens\n");
  }

  absl::Status Write(const Request& r) override {
    if (r.arrival_ns < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(file_.path(), ": record ", records_, ": arrival_ns: expected >= 0, got ", r.arrival_ns));
    }
    ++records_;
    return file_.Put(absl::StrFormat("%d.%09d,%d,%d\n", r.arrival_ns / 1'000'000'000, r.arrival_ns % 1'000'000'000,
                                     r.input_tokens, r.output_tokens));
  }

  absl::Status Close() override { return file_.Commit(); }

 private:
  StreamedFile file_;
  int64_t records_ = 0;
};

class MooncakeWriter final : public TraceWriter {
 public:
  absl::Status Open(const std::string& path, int32_t block_tokens) {
    if (block_tokens < 0 || block_tokens > kMooncakeExportBlockTokens ||
        (block_tokens > 0 && kMooncakeExportBlockTokens % block_tokens != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": cannot write Mooncake's 512-token hash ids from this trace's ", block_tokens,
          "-token blocks: a 512-token block must cover whole blocks of the trace (512 a multiple of the block "
          "size), or its id would depend on tokens the trace's ids do not describe"));
    }
    group_ = block_tokens > 0 ? kMooncakeExportBlockTokens / block_tokens : 0;
    return file_.Open(path);
  }

  absl::Status Write(const Request& r) override {
    KVSIM_RETURN_IF_ERROR(CheckHashes(file_.path(), records_, r));
    if (r.arrival_ns < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(file_.path(), ": record ", records_, ": arrival_ns: expected >= 0, got ", r.arrival_ns));
    }
    Json hash_ids = Json::array();
    const int64_t num_ids = NumBlocks(r.input_tokens, kMooncakeExportBlockTokens);
    const int64_t n = static_cast<int64_t>(r.block_hashes.size());
    for (int64_t j = 0; j < num_ids; ++j) {
      uint64_t id;
      if (n == 0) {
        id = next_id_++;  // no hashes: a block shared with nothing
      } else if (group_ == 1) {
        id = r.block_hashes[j];
      } else {
        const int64_t begin = j * group_;
        const int64_t end = std::min<int64_t>(begin + group_, n);
        key_.assign(r.block_hashes.begin() + begin, r.block_hashes.begin() + end);
        auto [it, inserted] = ids_.try_emplace(key_, next_id_);
        if (inserted) ++next_id_;
        id = it->second;
      }
      hash_ids.push_back(id);
    }
    Json line = Json::object();
    line["timestamp"] = r.arrival_ns / 1'000'000;
    line["input_length"] = r.input_tokens;
    line["output_length"] = r.output_tokens;
    line["hash_ids"] = std::move(hash_ids);
    line_ = DumpJsonLine(line);
    line_ += '\n';
    ++records_;
    return file_.Put(line_);
  }

  absl::Status Close() override { return file_.Commit(); }

 private:
  StreamedFile file_;
  int64_t group_ = 0;  // trace blocks per 512-token block; 0 = the trace has no hashes
  absl::flat_hash_map<std::vector<uint64_t>, uint64_t> ids_;
  uint64_t next_id_ = 0;
  std::vector<uint64_t> key_;
  std::string line_;
  int64_t records_ = 0;
};

class OracleGeneralWriter final : public TraceWriter {
 public:
  OracleGeneralWriter(std::string path, int32_t fresh_block_tokens)
      : path_(std::move(path)), fresh_block_tokens_(fresh_block_tokens) {}

  absl::Status Write(const Request& request) override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat(path_, ": writer closed"));
    KVSIM_RETURN_IF_ERROR(CheckHashes(path_, records_, request));
    const Request* r = &request;
    if (request.block_hashes.empty()) {
      fresh_ = request;
      AssignFreshBlockHashes(fresh_block_tokens_, &fresh_);
      r = &fresh_;
    }
    const int64_t seconds = r->arrival_ns / 1'000'000'000;
    if (r->arrival_ns < 0 || seconds > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": record ", records_,
                                                     ": arrival_ns: expected 0 .. 2^32 s (uint32 clock_time), got ",
                                                     r->arrival_ns, " ns"));
    }
    for (uint64_t id : r->block_hashes) {
      accesses_.push_back({static_cast<uint32_t>(seconds), id, static_cast<uint32_t>(r->block_tokens)});
    }
    ++records_;
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed twice"));
    closed_ = true;
    const int64_t n = static_cast<int64_t>(accesses_.size());
    std::vector<int64_t> next(n, -1);
    absl::flat_hash_map<uint64_t, int64_t> later;  // block -> 1-based index of its next access
    for (int64_t i = n - 1; i >= 0; --i) {
      auto [it, inserted] = later.try_emplace(accesses_[i].obj_id, i + 1);
      if (!inserted) {
        next[i] = it->second;
        it->second = i + 1;
      }
    }
    std::string bytes;
    bytes.reserve(static_cast<size_t>(n * kOracleGeneralRecordBytes));
    for (int64_t i = 0; i < n; ++i) {
      PutLittleEndian(accesses_[i].clock_time, 4, &bytes);
      PutLittleEndian(accesses_[i].obj_id, 8, &bytes);
      PutLittleEndian(accesses_[i].obj_size, 4, &bytes);
      PutLittleEndian(static_cast<uint64_t>(next[i]), 8, &bytes);
    }
    return WriteFileAtomically(path_, bytes);
  }

 private:
  struct Access {
    uint32_t clock_time;
    uint64_t obj_id;
    uint32_t obj_size;
  };

  static void PutLittleEndian(uint64_t value, int num_bytes, std::string* out) {
    for (int b = 0; b < num_bytes; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xff));
  }

  std::string path_;
  int32_t fresh_block_tokens_;
  std::vector<Access> accesses_;
  Request fresh_;
  int64_t records_ = 0;
  bool closed_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenVidurTraceWriter(const std::string& path,
                                                                  const TraceWriterOptions& options) {
  (void)options;
  auto writer = std::make_unique<VidurWriter>();
  KVSIM_RETURN_IF_ERROR(writer->Open(path));
  return std::unique_ptr<TraceWriter>(std::move(writer));
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenMooncakeTraceWriter(const std::string& path,
                                                                     const TraceWriterOptions& options) {
  auto writer = std::make_unique<MooncakeWriter>();
  KVSIM_RETURN_IF_ERROR(writer->Open(path, options.block_tokens));
  return std::unique_ptr<TraceWriter>(std::move(writer));
}

absl::StatusOr<std::unique_ptr<TraceWriter>> OpenOracleGeneralTraceWriter(const std::string& path,
                                                                          const TraceWriterOptions& options) {
  if (options.fresh_block_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("fresh_block_tokens: expected > 0, got ", options.fresh_block_tokens));
  }
  return std::unique_ptr<TraceWriter>(new OracleGeneralWriter(path, options.fresh_block_tokens));
}

}  // namespace kvsim
