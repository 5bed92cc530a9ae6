#include "traces/text/request_id_check.h"

#include <sys/types.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace kvsim {

RequestIdCheck::RequestIdCheck(int64_t memory_entries) : memory_entries_(memory_entries) {
  KVSIM_CHECK(memory_entries >= 1) << "RequestIdCheck holding " << memory_entries << " entries";
}

RequestIdCheck::~RequestIdCheck() {
  if (file_ != nullptr) std::fclose(file_);
}

void RequestIdCheck::Add(int64_t line, uint64_t request_id, int64_t parent_id) {
  const uint64_t line_kind = static_cast<uint64_t>(line) * 2;
  Push(Entry{request_id, line_kind});
  if (parent_id >= 0) Push(Entry{static_cast<uint64_t>(parent_id), line_kind + 1});
}

void RequestIdCheck::Push(Entry entry) {
  // Reserved once (pages are touched only as entries arrive): growing by doubling would hold the old
  // and the new buffer at once, 1.5x the bound.
  if (entries_.capacity() == 0) entries_.reserve(static_cast<size_t>(memory_entries_));
  entries_.push_back(entry);
  if (static_cast<int64_t>(entries_.size()) >= memory_entries_) SpillRun();
}

void RequestIdCheck::SpillRun() {
  std::sort(entries_.begin(), entries_.end());
  if (!failed_ && file_ == nullptr) {
    file_ = std::tmpfile();
    failed_ = file_ == nullptr;
  }
  if (!failed_) {
    failed_ = std::fwrite(entries_.data(), sizeof(Entry), entries_.size(), file_) != entries_.size();
  }
  runs_.push_back(Run{file_entries_, static_cast<int64_t>(entries_.size())});
  file_entries_ += static_cast<int64_t>(entries_.size());
  entries_.clear();
}

absl::Status RequestIdCheck::Finish(const std::string& path) {
  if (failed_ || (file_ != nullptr && std::fflush(file_) != 0)) {
    return absl::InternalError(
        absl::StrCat(path, ": request ids: cannot write the temporary spill file (std::tmpfile, in TMPDIR)"));
  }
  const absl::Status read_error =
      absl::InternalError(absl::StrCat(path, ": request ids: cannot read the temporary spill file"));
  std::sort(entries_.begin(), entries_.end());
  // Sources 0..runs-1: the spilled runs, each read `per_run` entries at a time; source `runs`: entries_.
  struct Source {
    std::vector<Entry> buffer;
    size_t next = 0;
    int64_t file_next = 0;  // next entry in the file to read
    int64_t file_end = 0;
  };
  const size_t num_runs = runs_.size();
  const int64_t per_run = std::max<int64_t>(1, kMergeEntries / std::max<int64_t>(1, spilled_runs()));
  std::vector<Source> sources(num_runs + 1);
  const auto refill = [&](Source& s) -> bool {
    s.buffer.resize(static_cast<size_t>(std::min(per_run, s.file_end - s.file_next)));
    s.next = 0;
    if (s.buffer.empty()) return true;
    if (fseeko(file_, static_cast<off_t>(s.file_next) * static_cast<off_t>(sizeof(Entry)), SEEK_SET) != 0 ||
        std::fread(s.buffer.data(), sizeof(Entry), s.buffer.size(), file_) != s.buffer.size()) {
      return false;
    }
    s.file_next += static_cast<int64_t>(s.buffer.size());
    return true;
  };
  // Min-heap of (entry, source).
  using Head = std::pair<Entry, size_t>;
  const auto later = [](const Head& a, const Head& b) { return b.first < a.first; };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heap(later);
  for (size_t i = 0; i < num_runs; ++i) {
    sources[i].file_next = runs_[i].offset;
    sources[i].file_end = runs_[i].offset + runs_[i].count;
    if (!refill(sources[i])) return read_error;
    if (!sources[i].buffer.empty()) heap.emplace(sources[i].buffer[0], i);
  }
  if (!entries_.empty()) heap.emplace(entries_[0], num_runs);

  // Each id's entries arrive together, in line order.
  bool have_id = false, defined = false;
  uint64_t id = 0;
  uint64_t repeat_line = std::numeric_limits<uint64_t>::max(), repeat_id = 0;
  orphans_ = 0;
  while (!heap.empty()) {
    const auto [entry, i] = heap.top();
    heap.pop();
    if (!have_id || entry.id != id) {
      have_id = true;
      id = entry.id;
      defined = false;
    }
    const uint64_t line = entry.line_kind / 2;
    if (entry.line_kind % 2 == 1) {
      if (!defined) ++orphans_;
    } else if (!defined) {
      defined = true;
    } else if (line < repeat_line) {  // the id's second definition; later ones come after it
      repeat_line = line;
      repeat_id = id;
    }
    Source& s = sources[i];
    const std::vector<Entry>& buffer = i == num_runs ? entries_ : s.buffer;
    if (++s.next < buffer.size()) {
      heap.emplace(buffer[s.next], i);
    } else if (i < num_runs && s.file_next < s.file_end) {
      if (!refill(s)) return read_error;
      heap.emplace(s.buffer[0], i);
    }
  }
  if (repeat_line != std::numeric_limits<uint64_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", repeat_line,
                                                   ": request_id: expected an id not used before, got ",
                                                   repeat_id, " again"));
  }
  return absl::OkStatus();
}

}  // namespace kvsim
