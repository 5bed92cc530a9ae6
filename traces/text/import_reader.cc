#include "traces/text/import_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace kvsim {
namespace {

// std::push_heap builds a max-heap; "greater" puts the earliest (then first in file) on top.
bool Later(int64_t a_ns, uint64_t a_seq, int64_t b_ns, uint64_t b_seq) {
  return a_ns != b_ns ? a_ns > b_ns : a_seq > b_seq;
}

}  // namespace

ImportReader::ImportReader(std::unique_ptr<RecordSource> source, TraceInfo info, size_t reorder_window)
    : source_(std::move(source)), info_(std::move(info)), window_(reorder_window) {
  KVSIM_CHECK(window_ >= 1) << "reorder window must hold at least one record";
}

bool ImportReader::Fill() {
  auto later = [](const Pending& a, const Pending& b) {
    return Later(a.timestamp_ns, a.sequence, b.timestamp_ns, b.sequence);
  };
  while (!source_done_ && heap_.size() < window_) {
    size_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = slots_.size();
      slots_.emplace_back();
    }
    Request& request = slots_[slot];
    if (!source_->Next(&request)) {
      free_slots_.push_back(slot);
      source_done_ = true;
      status_ = source_->status();
      if (status_.ok() && num_read_ == 0) {
        status_ = absl::InvalidArgumentError(
            absl::StrCat(info_.path, ": expected at least one record, found none (empty trace)"));
      }
      return status_.ok();
    }
    const int64_t t = request.arrival_ns;
    if (have_previous_ && t < previous_timestamp_ns_) ++num_out_of_order_;
    have_previous_ = true;
    previous_timestamp_ns_ = t;
    if (have_emitted_ && t < last_emitted_ns_) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(source_->position(), ": timestamp: ", t - origin_ns_,
                       " ns after the trace start is earlier than a record already replayed (",
                       last_emitted_ns_ - origin_ns_, " ns): the file is out of time order by more than the ", window_,
                       "-record reorder window; sort the file by timestamp first"));
      return false;
    }
    if (!source_->has_request_ids()) request.request_id = num_read_;
    heap_.push_back({t, num_read_, slot});
    std::push_heap(heap_.begin(), heap_.end(), later);
    ++num_read_;
  }
  return true;
}

bool ImportReader::Next(Request* request) {
  if (!status_.ok()) return false;
  if (!Fill()) return false;
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), [](const Pending& a, const Pending& b) {
    return Later(a.timestamp_ns, a.sequence, b.timestamp_ns, b.sequence);
  });
  const Pending top = heap_.back();
  heap_.pop_back();
  if (!have_emitted_) {
    origin_ns_ = source_->times_are_relative() ? 0 : top.timestamp_ns;
    have_emitted_ = true;
  }
  last_emitted_ns_ = top.timestamp_ns;
  std::swap(*request, slots_[top.slot]);  // the caller's old Request becomes the free slot's storage
  request->arrival_ns = top.timestamp_ns - origin_ns_;
  free_slots_.push_back(top.slot);
  return true;
}

absl::StatusOr<std::unique_ptr<TraceReader>> MakeImportReader(std::unique_ptr<RecordSource> source, TraceInfo info,
                                                              const TraceOptions& options) {
  if (options.reorder_window < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("reorder window: expected at least 1 record, got ", options.reorder_window));
  }
  return std::unique_ptr<TraceReader>(
      new ImportReader(std::move(source), std::move(info), static_cast<size_t>(options.reorder_window)));
}

std::vector<std::string> ImportReader::warnings() const {
  std::vector<std::string> warnings = source_->warnings();
  if (num_out_of_order_ > 0) {
    warnings.push_back(absl::StrCat(info_.path, ": non-monotonic timestamps re-sorted: ", num_out_of_order_,
                                    " records earlier than their predecessor"));
  }
  return warnings;
}

}  // namespace kvsim
