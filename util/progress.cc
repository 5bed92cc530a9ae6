#include "util/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvsim {
namespace {

constexpr int kBarCells = 20;

std::string Rate(double per_s) {
  if (per_s >= 1e9) return absl::StrFormat("%.1fG", per_s / 1e9);
  if (per_s >= 1e6) return absl::StrFormat("%.1fM", per_s / 1e6);
  if (per_s >= 1e3) return absl::StrFormat("%.1fk", per_s / 1e3);
  return absl::StrFormat("%.1f", per_s);
}

std::string Clock(int64_t seconds) {
  if (seconds >= 3600) return absl::StrFormat("%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60);
  return absl::StrFormat("%d:%02d", seconds / 60, seconds % 60);
}

}  // namespace

std::string FormatProgressLine(const std::string& label, int64_t done, int64_t total, int64_t elapsed_ns,
                               const std::string& unit) {
  const double elapsed_s = elapsed_ns / 1e9;
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0;
  if (total <= 0) return absl::StrCat(label, " ", done, " ", unit, " ", Rate(rate), " ", unit, "/s");
  done = std::clamp<int64_t>(done, 0, total);
  const int cells = static_cast<int>(done * kBarCells / total);
  const int percent = static_cast<int>(done * 100 / total);
  std::string line = absl::StrCat(label, " [", std::string(cells, '#'), std::string(kBarCells - cells, '.'), "] ",
                                  absl::StrFormat("%3d%%", percent), " ", Rate(rate), " ", unit, "/s ETA ");
  if (done == 0 || rate <= 0) return line + "?";
  return line + Clock(static_cast<int64_t>((total - done) / rate + 0.5));
}

Progress::Options Progress::ForStderr(bool quiet) {
  Options o;
  o.enabled = !quiet && isatty(STDERR_FILENO) != 0;
  o.out = &std::cerr;
  return o;
}

Progress::Progress(std::string label, int64_t total, std::string unit, Options options)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), options_(std::move(options)) {
  start_ns_ = Now();
}

Progress::~Progress() { Finish(); }

int64_t Progress::Now() const {
  if (options_.now_ns) return options_.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Progress::Draw() {
  const int64_t now = Now();
  std::string line = FormatProgressLine(label_, done_, total_, now - start_ns_, unit_);
  const size_t width = line.size();
  if (width < last_width_) line += std::string(last_width_ - width, ' ');  // erase a longer previous line
  *options_.out << "\r" << line << std::flush;
  last_width_ = width;
  last_draw_ns_ = now;
  drawn_ = true;
  ++redraws_;
}

void Progress::Update(int64_t done) {
  done_ = done;
  if (!options_.enabled || finished_) return;
  if (drawn_ && Now() - last_draw_ns_ < options_.min_redraw_ns) return;
  Draw();
}

std::function<void(int64_t, int64_t)> Progress::Callback() {
  return [this](int64_t done, int64_t total) {
    if (total > 0) set_total(total);
    Update(done);
  };
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!options_.enabled) return;
  Draw();
  *options_.out << "\n" << std::flush;
}

}  // namespace kvsim
