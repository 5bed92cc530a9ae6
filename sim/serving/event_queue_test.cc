#include "sim/serving/event_queue.h"

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(EventQueueTest, OrdersByTimeThenPriorityThenSequence) {
  EventQueue queue;
  queue.Schedule(20, kPriorityArrival, EventType::kArrival, -1, 1);
  queue.Schedule(10, kPrioritySchedule, EventType::kSchedule, 0, 2);
  queue.Schedule(10, kPriorityIterationEnd, EventType::kIterationEnd, 0, 3);
  queue.Schedule(10, kPriorityArrival, EventType::kArrival, -1, 4);
  queue.Schedule(10, kPriorityArrival, EventType::kArrival, -1, 5);
  std::vector<int64_t> order;
  while (!queue.empty()) order.push_back(queue.PopNext().payload);
  // Time 10: iteration end (priority 0), the two arrivals in scheduling order, then schedule; then time 20.
  EXPECT_EQ(order, (std::vector<int64_t>{3, 4, 5, 2, 1}));
  EXPECT_EQ(queue.now_ns(), 20);
}

TEST(EventQueueTest, EventsScheduledWhilePoppingKeepTheOrder) {
  EventQueue queue;
  queue.Schedule(5, kPriorityArrival, EventType::kArrival, -1, 0);
  Event first = queue.PopNext();
  EXPECT_EQ(first.time_ns, 5);
  queue.Schedule(5, kPrioritySchedule, EventType::kSchedule, 0, 1);
  queue.Schedule(5, kPriorityArrival, EventType::kArrival, -1, 2);
  EXPECT_EQ(queue.PopNext().payload, 2);
  EXPECT_EQ(queue.PopNext().payload, 1);
  EXPECT_TRUE(queue.empty());
}

// Random interleavings of schedules and pops (many at the current time, some ahead of everything queued,
// some behind) pop in the order of a brute-force reference: the earliest (time, priority, sequence) of
// the events not yet popped.
TEST(EventQueueTest, RandomInterleavingsPopInTheReferenceOrder) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    EventQueue queue;
    std::vector<Event> pending;  // the reference: scheduled, not yet popped
    uint64_t sequence = 0;
    SimTime now = 0;
    for (int op = 0; op < 300; ++op) {
      if (!pending.empty() && rng() % 3 == 0) {
        auto first = std::min_element(pending.begin(), pending.end(), [](const Event& a, const Event& b) {
          return std::tie(a.time_ns, a.priority, a.sequence) < std::tie(b.time_ns, b.priority, b.sequence);
        });
        ASSERT_EQ(queue.next_time_ns(), first->time_ns);
        const Event popped = queue.PopNext();
        ASSERT_EQ(popped.sequence, first->sequence) << "trial " << trial << " op " << op;
        ASSERT_EQ(popped.payload, first->payload);
        now = popped.time_ns;
        pending.erase(first);
      } else {
        const SimTime time = now + static_cast<SimTime>(rng() % 4) * (rng() % 2 == 0 ? 1 : 100);
        const int32_t priority = static_cast<int32_t>(rng() % 3);
        const int64_t payload = static_cast<int64_t>(rng() % 1000);
        queue.Schedule(time, priority, EventType::kArrival, 0, payload);
        pending.push_back(Event{time, priority, sequence++, EventType::kArrival, 0, payload});
      }
      ASSERT_EQ(queue.size(), pending.size());
      ASSERT_EQ(queue.empty(), pending.empty());
    }
  }
}

TEST(EventQueueDeathTest, SchedulingInThePastIsABug) {
  EventQueue queue;
  queue.Schedule(100, kPriorityArrival, EventType::kArrival, -1, 0);
  queue.PopNext();
  EXPECT_DEATH(queue.Schedule(99, kPriorityArrival, EventType::kArrival, -1, 0), "scheduled after");
}

}  // namespace
}  // namespace kvsim
