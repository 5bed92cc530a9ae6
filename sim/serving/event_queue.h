// File: sim/serving/event_queue.h
//
// EventQueue: the simulator's pending events, popped in a total order: time, then priority (smaller first),
// then the sequence number given at scheduling (earlier first). The order never depends on memory
// addresses or hashing, so a run is reproducible. Events are small values; the queue is a binary heap over
// a vector (plus the first event, when it was scheduled first, kept beside it), so scheduling allocates only
// while the queue grows past its largest size so far.
//
// The queue holds no policy: what an event means is up to the engine that pops it.
//
// Example:
//   EventQueue queue;
//   queue.Schedule(5 * kNsPerMs, kPriorityArrival, EventType::kArrival, /*replica=*/0, /*payload=*/slot);
//   while (!queue.empty()) { Event event = queue.PopNext(); ... }
//
// Thread-safety: none; one engine owns a queue.
#ifndef KVSIM_SIM_SERVING_EVENT_QUEUE_H_
#define KVSIM_SIM_SERVING_EVENT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/serving/clock.h"

namespace kvsim {

enum class EventType : uint8_t {
  kIterationEnd,  // a replica's iteration completes
  kArrival,       // a request arrives at the router
  kSchedule,      // a replica forms its next iteration (after every arrival at the same time)
};

// Named priorities for events at the same time: an iteration's end frees blocks before arrivals are routed,
// and a replica schedules only after every arrival of that instant has joined its queue.
inline constexpr int32_t kPriorityIterationEnd = 0;
inline constexpr int32_t kPriorityArrival = 1;
inline constexpr int32_t kPrioritySchedule = 2;

struct Event {
  SimTime time_ns = 0;
  int32_t priority = 0;
  uint64_t sequence = 0;  // assigned by the queue
  EventType type = EventType::kArrival;
  int32_t replica = -1;
  int64_t payload = 0;  // meaning depends on type (a request slot for arrivals)
};

class EventQueue {
 public:
  // Adds an event. REQUIRES: time_ns >= the time of the last popped event (no events in the past).
  void Schedule(SimTime time_ns, int32_t priority, EventType type, int32_t replica, int64_t payload);

  // Removes and returns the first event in (time, priority, sequence) order. REQUIRES: !empty().
  Event PopNext();

  // Time of the first event in order. REQUIRES: !empty().
  SimTime next_time_ns() const { return has_front_ ? front_.time_ns : heap_.front().time_ns; }
  bool empty() const { return !has_front_ && heap_.empty(); }
  size_t size() const { return heap_.size() + (has_front_ ? 1 : 0); }
  // Time of the last popped event (0 before the first).
  SimTime now_ns() const { return now_ns_; }

 private:
  void Push(const Event& event);  // into the heap

  // The first event in order, when it was scheduled ahead of every queued one (an iteration's end
  // before the next arrival: the common case on one replica), is kept out of the heap, so that it is
  // scheduled and popped without a heap operation. Every event in heap_ comes after it.
  bool has_front_ = false;
  Event front_;
  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
  SimTime now_ns_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_EVENT_QUEUE_H_
