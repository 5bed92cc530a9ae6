// File: util/check.h
//
// KVSIM_CHECK(cond) aborts with file, line and the condition when an internal invariant is broken
// (Abseil 20220623 has no absl/log). Use it only for invariants where continuing would be worse than
// stopping; input errors return absl::Status instead.
//
// Example:
//   KVSIM_CHECK(refcount > 0) << "block " << id;
#ifndef KVSIM_UTIL_CHECK_H_
#define KVSIM_UTIL_CHECK_H_

#include <sstream>

namespace kvsim {
namespace internal {

// Collects the message of a failed check and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Makes `cond ? (void)0 : CheckFailure(...).stream() << ...` type-check.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace kvsim

#define KVSIM_CHECK(cond) \
  (cond) ? (void)0 : ::kvsim::internal::Voidify() & ::kvsim::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#endif  // KVSIM_UTIL_CHECK_H_
