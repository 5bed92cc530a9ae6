#include "traces/test_util.h"

#include <cstdio>
#include <cstdlib>

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

std::string DataPath(const std::string& file) { return "traces/data/" + file; }

}  // namespace kvsim
