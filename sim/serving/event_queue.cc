#include "sim/serving/event_queue.h"

#include <algorithm>

#include "util/check.h"

namespace kvsim {
namespace {

// std::push_heap builds a max-heap; "greater" puts the earliest event on top. A function object (not a
// function pointer) so the heap operations inline the comparison.
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.sequence > b.sequence;
  }
};

}  // namespace

void EventQueue::Schedule(SimTime time_ns, int32_t priority, EventType type, int32_t replica, int64_t payload) {
  KVSIM_CHECK(time_ns >= now_ns_) << "event at " << time_ns << " ns scheduled after " << now_ns_ << " ns";
  const Event event{time_ns, priority, next_sequence_++, type, replica, payload};
  const Event* first = has_front_ ? &front_ : heap_.empty() ? nullptr : &heap_.front();
  if (first != nullptr && !Later()(*first, event)) {  // it comes after what is first now: into the heap
    Push(event);
    return;
  }
  if (has_front_) Push(front_);  // the new first event takes the front's place
  front_ = event;
  has_front_ = true;
}

void EventQueue::Push(const Event& event) {
  heap_.push_back(event);
  std::push_heap(heap_.begin(), heap_.end(), Later());
}

Event EventQueue::PopNext() {
  if (has_front_) {
    has_front_ = false;
    now_ns_ = front_.time_ns;
    return front_;
  }
  KVSIM_CHECK(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), Later());
  Event event = heap_.back();
  heap_.pop_back();
  now_ns_ = event.time_ns;
  return event;
}

}  // namespace kvsim
