#include "sim/serving/sorted_spill.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "util/check.h"

namespace kvsim {

SortedSpill::SortedSpill(int64_t run_values) : run_values_(run_values) {
  KVSIM_CHECK(run_values >= 1) << "SortedSpill run of " << run_values << " values";
}

SortedSpill::~SortedSpill() {
  if (file_ != nullptr) std::fclose(file_);
}

void SortedSpill::Add(double value) {
  values_.push_back(value);
  ++size_;
  if (static_cast<int64_t>(values_.size()) >= run_values_) SpillRun();
}

void SortedSpill::SpillRun() {
  std::sort(values_.begin(), values_.end());
  if (!failed_ && file_ == nullptr) {
    file_ = std::tmpfile();
    failed_ = file_ == nullptr;
  }
  if (!failed_) {
    // Runs are appended; a Visit in between may have moved the position.
    failed_ = std::fseek(file_, 0, SEEK_END) != 0 ||
              std::fwrite(values_.data(), sizeof(double), values_.size(), file_) != values_.size();
  }
  runs_.push_back(Run{file_values_, static_cast<int64_t>(values_.size())});
  file_values_ += static_cast<int64_t>(values_.size());
  values_.clear();
}

absl::Status SortedSpill::Visit(const std::function<void(double)>& visit) {
  if (failed_ || (file_ != nullptr && std::fflush(file_) != 0)) {
    return absl::InternalError("sorted values: cannot write the temporary spill file (std::tmpfile, in TMPDIR)");
  }
  std::sort(values_.begin(), values_.end());
  if (runs_.empty()) {
    for (double v : values_) visit(v);
    return absl::OkStatus();
  }
  // Source 0..runs-1: the spilled runs, each read kReadValues at a time; source `runs`: values_.
  struct Source {
    std::vector<double> buffer;
    size_t next = 0;
    int64_t file_next = 0;  // next value in the file to read
    int64_t file_end = 0;
  };
  std::vector<Source> sources(runs_.size() + 1);
  // Many runs (a long trace's token gaps): smaller reads, so the buffers stay within kMergeValues.
  const int64_t read_values =
      std::max(kMinReadValues, std::min(kReadValues, kMergeValues / static_cast<int64_t>(runs_.size())));
  const auto refill = [&](Source& s) -> bool {
    s.buffer.resize(static_cast<size_t>(std::min(read_values, s.file_end - s.file_next)));
    s.next = 0;
    if (s.buffer.empty()) return true;
    if (std::fseek(file_, static_cast<long>(s.file_next * sizeof(double)), SEEK_SET) != 0 ||
        std::fread(s.buffer.data(), sizeof(double), s.buffer.size(), file_) != s.buffer.size()) {
      return false;
    }
    s.file_next += static_cast<int64_t>(s.buffer.size());
    return true;
  };
  for (size_t i = 0; i < runs_.size(); ++i) {
    sources[i].file_next = runs_[i].offset;
    sources[i].file_end = runs_[i].offset + runs_[i].count;
  }
  // Min-heap of (value, source).
  using Head = std::pair<double, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (!refill(sources[i])) return absl::InternalError("sorted values: cannot read the temporary spill file");
    if (!sources[i].buffer.empty()) heap.emplace(sources[i].buffer[0], i);
  }
  if (!values_.empty()) heap.emplace(values_[0], runs_.size());
  while (!heap.empty()) {
    const auto [value, i] = heap.top();
    heap.pop();
    visit(value);
    Source& s = sources[i];
    const std::vector<double>& buffer = i == runs_.size() ? values_ : s.buffer;
    if (++s.next < buffer.size()) {
      heap.emplace(buffer[s.next], i);
    } else if (i < runs_.size() && s.file_next < s.file_end) {
      if (!refill(s)) return absl::InternalError("sorted values: cannot read the temporary spill file");
      heap.emplace(s.buffer[0], i);
    }
  }
  return absl::OkStatus();
}

}  // namespace kvsim
