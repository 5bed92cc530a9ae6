#include "util/registry.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

Registry<int>& Numbers() {
  static auto* registry = new Registry<int>("number");
  return *registry;
}

// Registered at static initialisation, as components are.
KVSIM_REGISTER(Numbers(), "two", 2);
KVSIM_REGISTER(Numbers(), "one", 1);

TEST(RegistryTest, FindsRegisteredEntriesAndListsNamesSorted) {
  ASSERT_NE(Numbers().Find("one"), nullptr);
  EXPECT_EQ(*Numbers().Find("one"), 1);
  EXPECT_EQ(*Numbers().Find("two"), 2);
  EXPECT_EQ(Numbers().Find("three"), nullptr);
  EXPECT_EQ(Numbers().Names(), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(Numbers().NameList(), "one, two");
}

TEST(RegistryTest, UnknownNameListsTheKnownOnes) {
  absl::StatusOr<const int*> three = Numbers().Get("three");
  EXPECT_EQ(three.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(three.status().message(), "unknown number 'three'; known: one, two");
  absl::StatusOr<const int*> two = Numbers().Get("two");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(**two, 2);
}

TEST(RegistryDeathTest, RegisteringANameTwiceIsAProgrammingError) {
  Registry<int> registry("number");
  registry.Register("one", 1);
  EXPECT_DEATH(registry.Register("one", 11), "number 'one' registered twice");
  EXPECT_DEATH(registry.Register("", 0), "empty number name");
}

}  // namespace
}  // namespace kvsim
