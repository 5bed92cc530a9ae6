#include "traces/test_util.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  KVSIM_CHECK(file != nullptr) << "cannot create " << path;
  KVSIM_CHECK(std::fwrite(contents.data(), 1, contents.size(), file) == contents.size()) << path;
  KVSIM_CHECK(std::fclose(file) == 0) << path;
  return path;
}

absl::StatusOr<std::vector<Request>> ReadAll(TraceReader& reader) {
  std::vector<Request> requests;
  Request request;
  while (reader.Next(&request)) requests.push_back(request);
  KVSIM_RETURN_IF_ERROR(reader.status());
  return requests;
}

absl::StatusOr<std::vector<Request>> ReadAll(const std::string& path, const TraceOptions& options) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(path, options));
  return ReadAll(*reader);
}

std::string RequestDifference(const Request& a, const Request& b) {
  auto field = [](const char* name, const auto& x, const auto& y) { return absl::StrCat(name, ": ", x, " vs ", y); };
  if (a.request_id != b.request_id) return field("request_id", a.request_id, b.request_id);
  if (a.arrival_ns != b.arrival_ns) return field("arrival_ns", a.arrival_ns, b.arrival_ns);
  if (a.session_id != b.session_id) return field("session_id", a.session_id, b.session_id);
  if (a.parent_id != b.parent_id) return field("parent_id", a.parent_id, b.parent_id);
  if (a.turn != b.turn) return field("turn", a.turn, b.turn);
  if (a.input_tokens != b.input_tokens) return field("input_tokens", a.input_tokens, b.input_tokens);
  if (a.output_tokens != b.output_tokens) return field("output_tokens", a.output_tokens, b.output_tokens);
  if (a.block_tokens != b.block_tokens) return field("block_tokens", a.block_tokens, b.block_tokens);
  if (a.block_hashes.size() != b.block_hashes.size()) {
    return field("block_hashes.size", a.block_hashes.size(), b.block_hashes.size());
  }
  for (size_t k = 0; k < a.block_hashes.size(); ++k) {
    if (a.block_hashes[k] != b.block_hashes[k]) {
      return field(absl::StrCat("block_hashes[", k, "]").c_str(), a.block_hashes[k], b.block_hashes[k]);
    }
  }
  if (a.block_token_counts != b.block_token_counts) {
    return field("block_token_counts.size", a.block_token_counts.size(), b.block_token_counts.size());
  }
  if (a.type != b.type) return field("type", static_cast<int>(a.type), static_cast<int>(b.type));
  if (a.failed != b.failed) return field("failed", a.failed, b.failed);
  if (a.model != b.model) return field("model", a.model, b.model);
  if (a.tool_calls.size() != b.tool_calls.size()) {
    return field("tool_calls.size", a.tool_calls.size(), b.tool_calls.size());
  }
  for (size_t k = 0; k < a.tool_calls.size(); ++k) {
    if (a.tool_calls[k].name != b.tool_calls[k].name) {
      return field("tool_calls.name", a.tool_calls[k].name, b.tool_calls[k].name);
    }
    if (a.tool_calls[k].duration_ns != b.tool_calls[k].duration_ns) {
      return field("tool_calls.duration_ns", a.tool_calls[k].duration_ns, b.tool_calls[k].duration_ns);
    }
  }
  return "";
}

std::string DataPath(const std::string& file) { return "traces/data/" + file; }

namespace {

uint64_t LittleEndian(const std::string& bytes, size_t offset, int num_bytes) {
  uint64_t value = 0;
  for (int b = num_bytes - 1; b >= 0; --b) value = (value << 8) | static_cast<unsigned char>(bytes[offset + b]);
  return value;
}

}  // namespace

std::vector<OracleRecord> ReadOracleGeneral(const std::string& bytes) {
  std::vector<OracleRecord> records;
  for (size_t at = 0; at + 24 <= bytes.size(); at += 24) {
    records.push_back({static_cast<uint32_t>(LittleEndian(bytes, at, 4)), LittleEndian(bytes, at + 4, 8),
                       static_cast<uint32_t>(LittleEndian(bytes, at + 12, 4)),
                       static_cast<int64_t>(LittleEndian(bytes, at + 16, 8))});
  }
  return records;
}

}  // namespace kvsim
