// File: util/progress.h
//
// Progress: one self-redrawing status line for long runs, e.g.
//   eval [##########..........]  50% 1.2M rec/s ETA 0:12
// drawn on a terminal only: when the stream is not a TTY (CI logs, files, pipes) nothing is written at all,
// and `--quiet` turns it off too. Redraws are rate-limited (at most one per `min_redraw_ns`, plus the
// final one), so calling Update() per record costs a clock read.
//
// Example:
//   Progress progress("replay", num_requests, "req", Progress::ForStderr(quiet));
//   for (...) progress.Update(done);
//   progress.Finish();
//
// Thread-safety: one thread at a time (call Update from the thread that owns it, or under a lock).
#ifndef KVSIM_UTIL_PROGRESS_H_
#define KVSIM_UTIL_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace kvsim {

// The line for `done` of `total` (total <= 0: unknown, no bar, percentage or ETA) after `elapsed_ns`:
// label, a 20-cell bar, the percentage, the rate in `unit`/s (with k, M, G) and the ETA as M:SS or
// H:MM:SS ("ETA ?" before any progress). Example: "gen [#########...........]  45% 1.2M rec/s ETA 0:12".
std::string FormatProgressLine(const std::string& label, int64_t done, int64_t total, int64_t elapsed_ns,
                               const std::string& unit);

class Progress {
 public:
  struct Options {
    bool enabled = false;                 // draw at all (a TTY and not --quiet)
    std::ostream* out = nullptr;          // where to draw; REQUIRES non-null when enabled
    std::function<int64_t()> now_ns;      // monotonic clock; empty = std::chrono::steady_clock
    int64_t min_redraw_ns = 200'000'000;  // at most 5 redraws a second
  };

  // Options for stderr: enabled when stderr is a terminal (isatty) and !quiet.
  static Options ForStderr(bool quiet);

  Progress(std::string label, int64_t total, std::string unit, Options options);
  ~Progress();  // Finish()es

  // Records `done` units finished; redraws when the last redraw is at least min_redraw_ns old.
  void Update(int64_t done);
  // Draws the final line and ends it with a newline (once; later calls do nothing).
  void Finish();

  // Sets the total where it becomes known only once work has started.
  void set_total(int64_t total) { total_ = total; }

  // The (done, total) callback the library options take (SweepOptions::progress, ReplayOptions::progress,
  // CacheReplayOptions::progress, ...), drawing on this Progress: a total > 0 replaces the one it has.
  // The Progress must outlive the callback's last call.
  std::function<void(int64_t, int64_t)> Callback();

  int64_t redraws() const { return redraws_; }

 private:
  int64_t Now() const;
  void Draw();

  std::string label_, unit_;
  int64_t total_;
  Options options_;
  int64_t start_ns_ = 0, last_draw_ns_ = 0, done_ = 0, redraws_ = 0;
  bool drawn_ = false, finished_ = false;
  size_t last_width_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_UTIL_PROGRESS_H_
