#include "traces/generators/arrival_process.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "traces/generators/portable_random.h"
#include "traces/generators/rate_schedule.h"
#include "util/status_macros.h"
#include "util/units.h"

namespace kvsim {
namespace {

constexpr uint64_t kArrivalStream = 1;
// Arrival times are kept below 2^62 ns (146 years), so adding a session's gaps cannot overflow.
constexpr double kMaxArrivalS = 4.6e9;

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// Poisson (cv = 1, exponential gaps) or Gamma renewal process through a rate schedule.
class RenewalProcess final : public ArrivalProcess {
 public:
  RenewalProcess(RateSchedule schedule, bool exponential, double cv, uint64_t seed, bool finite)
      : schedule_(std::move(schedule)),
        exponential_(exponential),
        cv_(cv),
        rng_(SeedFor(seed, kArrivalStream)),
        finite_(finite) {}

  bool Next(int64_t* arrival_ns) override {
    if (ended_) return false;
    if (started_) {
      operational_ += exponential_ ? SampleExponential(rng_, 1.0) : SampleGamma(rng_, 1 / (cv_ * cv_), cv_ * cv_);
    }
    started_ = true;
    double t_s;
    if (!schedule_.TimeAt(operational_, &t_s)) return Stop(absl::OkStatus());
    if (t_s > kMaxArrivalS) {
      return Stop(absl::OutOfRangeError(
          absl::StrFormat("arrivals: the next arrival (%g s) is beyond the supported %g s", t_s, kMaxArrivalS)));
    }
    *arrival_ns = SecondsToNs(t_s);
    return true;
  }
  absl::Status status() const override { return status_; }
  bool finite() const override { return finite_; }

 private:
  bool Stop(absl::Status status) {
    ended_ = true;
    status_ = std::move(status);
    return false;
  }

  RateSchedule schedule_;
  bool exponential_;
  double cv_;
  Rng rng_;
  bool finite_;
  double operational_ = 0;  // L: expected arrivals so far
  bool started_ = false;
  bool ended_ = false;
  absl::Status status_;
};

// Arrival times of an existing trace.
class ReplayProcess final : public ArrivalProcess {
 public:
  ReplayProcess(std::unique_ptr<TraceReader> reader, std::string path, double speedup)
      : reader_(std::move(reader)), path_(std::move(path)), speedup_(speedup) {}

  bool Next(int64_t* arrival_ns) override {
    if (!status_.ok() || !reader_->Next(&request_)) {
      if (status_.ok()) status_ = reader_->status();
      return false;
    }
    ++record_;
    const int64_t t = speedup_ == 1 ? request_.arrival_ns : std::llround(request_.arrival_ns / speedup_);
    if (t < previous_ns_ || t < 0) {
      status_ = absl::InvalidArgumentError(
          absl::StrFormat("%s: record %d: arrival_ns: expected >= %d (arrivals must not decrease), got %d", path_,
                          record_, previous_ns_, request_.arrival_ns));
      return false;
    }
    previous_ns_ = t;
    *arrival_ns = t;
    return true;
  }
  absl::Status status() const override { return status_; }
  bool finite() const override { return true; }

 private:
  std::unique_ptr<TraceReader> reader_;
  std::string path_;
  double speedup_;
  Request request_;
  int64_t record_ = 0;  // 1-based number of the record last read
  int64_t previous_ns_ = 0;
  absl::Status status_;
};

absl::StatusOr<std::unique_ptr<ArrivalProcess>> CreateReplay(const proto::Arrivals& spec, const TraceOpener& open_trace,
                                                             const std::string& field) {
  const proto::Arrivals::Replay& replay = spec.replay();
  if (spec.rate_per_s() != 0 || spec.has_schedule()) {
    return Invalid(field + ".rate_per_s", "rate_per_s and schedule apply to poisson and gamma, not replay");
  }
  const double speedup = replay.speedup() == 0 ? 1 : replay.speedup();
  if (!std::isfinite(speedup) || speedup < 0) {
    return Invalid(field + ".replay.speedup", absl::StrFormat("must be a finite number > 0, got %g", speedup));
  }
  if (replay.trace_path().empty()) return Invalid(field + ".replay.trace_path", "must name a trace file");
  if (!open_trace) {
    return Invalid(field + ".replay.trace_path", "traces cannot be opened here (no trace opener given)");
  }
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open_trace(replay.trace_path()));
  return std::unique_ptr<ArrivalProcess>(new ReplayProcess(std::move(reader), replay.trace_path(), speedup));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArrivalProcess>> CreateArrivalProcess(const proto::Arrivals& spec, uint64_t seed,
                                                                     const TraceOpener& open_trace,
                                                                     const std::string& field) {
  double cv = 1;
  switch (spec.process_case()) {
    case proto::Arrivals::kReplay:
      return CreateReplay(spec, open_trace, field);
    case proto::Arrivals::kGamma:
      cv = spec.gamma().cv();
      if (!(cv >= kMinGammaCv && cv <= kMaxGammaCv)) {
        return Invalid(field + ".gamma.cv",
                       absl::StrFormat("must be in [%g, %g] (what the gamma sampler represents), got %g", kMinGammaCv,
                                       kMaxGammaCv, cv));
      }
      break;
    case proto::Arrivals::kPoisson:
      break;
    case proto::Arrivals::PROCESS_NOT_SET:
      return Invalid(field, "no arrival process set (expected poisson, gamma or replay)");
  }
  bool finite = false;
  RateSchedule schedule = RateSchedule::Constant(1);
  if (spec.has_schedule()) {
    if (spec.rate_per_s() != 0) {
      return Invalid(field + ".rate_per_s", "set either rate_per_s or schedule, not both");
    }
    KVSIM_ASSIGN_OR_RETURN(schedule, RateSchedule::Create(spec.schedule(), field + ".schedule"));
    const auto& points = spec.schedule().points();
    finite = spec.schedule().period_s() == 0 && points[points.size() - 1].rate_per_s() == 0;
  } else {
    const double rate = spec.rate_per_s();
    if (!std::isfinite(rate) || rate <= 0) {
      return Invalid(field + ".rate_per_s",
                     absl::StrFormat("must be a finite number > 0 (or set schedule), got %g", rate));
    }
    schedule = RateSchedule::Constant(rate);
  }
  const bool exponential = spec.process_case() == proto::Arrivals::kPoisson;
  return std::unique_ptr<ArrivalProcess>(new RenewalProcess(std::move(schedule), exponential, cv, seed, finite));
}

}  // namespace kvsim
