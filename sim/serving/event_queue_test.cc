#include "sim/serving/event_queue.h"

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

TEST(EventQueueDeathTest, SchedulingInThePastIsABug) {
  EventQueue queue;
  queue.Schedule(100, kPriorityArrival, EventType::kArrival, -1, 0);
  queue.PopNext();
  EXPECT_DEATH(queue.Schedule(99, kPriorityArrival, EventType::kArrival, -1, 0), "scheduled after");
}

}  // namespace
}  // namespace kvsim
