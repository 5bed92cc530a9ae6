#include "sim/serving/session_chains.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/sorted_spill.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// A temporary file (std::tmpfile: removed when closed, whatever the exit path) of fixed-size records,
// appended in order, then read back by index through a direct-mapped cache of `cache_pages` pages of
// `page_records` records. REQUIRES: every Append before the first Get.
template <typename T>
class RecordFile {
  static_assert(std::is_trivially_copyable<T>::value, "RecordFile writes records as bytes");

 public:
  RecordFile(int64_t page_records, int64_t cache_pages)
      : page_records_(page_records), tags_(static_cast<size_t>(cache_pages), -1), pages_(tags_.size()) {
    KVSIM_CHECK(page_records >= 1 && cache_pages >= 1) << "RecordFile pages " << page_records << " x " << cache_pages;
  }
  ~RecordFile() {
    if (file_ != nullptr) std::fclose(file_);
  }
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

  void Append(const T& record) {
    KVSIM_CHECK(!reading_) << "RecordFile::Append after Get";
    if (!failed_ && file_ == nullptr) {
      file_ = std::tmpfile();
      failed_ = file_ == nullptr;
    }
    if (!failed_) failed_ = std::fwrite(&record, sizeof(T), 1, file_) != 1;
    ++size_;
  }
  int64_t size() const { return size_; }
  // Internal if a write failed.
  absl::Status status() const {
    return failed_ ? absl::InternalError(
                         "session chains: cannot write a temporary file (std::tmpfile, in TMPDIR)")
                   : absl::OkStatus();
  }

  // Record i (REQUIRES: 0 <= i < size()). Internal if the file could not be written or read.
  absl::StatusOr<T> Get(int64_t i) {
    KVSIM_CHECK(i >= 0 && i < size_) << "RecordFile::Get(" << i << ") of " << size_;
    if (!reading_) {
      reading_ = true;
      failed_ = failed_ || (file_ != nullptr && std::fflush(file_) != 0);
    }
    KVSIM_RETURN_IF_ERROR(status());
    const int64_t page = i / page_records_;
    const size_t slot = static_cast<size_t>(page % static_cast<int64_t>(tags_.size()));
    std::vector<T>& cached = pages_[slot];
    if (tags_[slot] != page) {
      const int64_t first = page * page_records_;
      cached.resize(static_cast<size_t>(std::min(page_records_, size_ - first)));
      const size_t bytes = cached.size() * sizeof(T);
      if (::pread(fileno(file_), cached.data(), bytes, static_cast<off_t>(first * sizeof(T))) !=
          static_cast<ssize_t>(bytes)) {
        tags_[slot] = -1;
        return absl::InternalError("session chains: cannot read a temporary file");
      }
      tags_[slot] = page;
    }
    return cached[static_cast<size_t>(i % page_records_)];
  }

 private:
  const int64_t page_records_;
  std::vector<int64_t> tags_;  // the page each slot holds; -1 = none
  std::vector<std::vector<T>> pages_;
  std::FILE* file_ = nullptr;
  int64_t size_ = 0;
  bool failed_ = false;
  bool reading_ = false;
};

// Per request, in trace order: what the think times and the records need.
struct LinkRecord {
  int64_t spill_offset;
  int64_t arrival_ns;
  int64_t tool_ns;
};

// A request (kind 0: key = its request_id) or a request's parent reference (kind 1: key = its parent_id),
// sorted so each id's request comes before the references to it.
struct IdKey {
  uint64_t key;
  int32_t kind;
  int32_t index;
  int64_t session_id;
  bool operator<(const IdKey& o) const {
    return key != o.key ? key < o.key : kind != o.kind ? kind < o.kind : index < o.index;
  }
};

// A request of a session.
struct SessionKey {
  int64_t session_id;
  int32_t index;
  int32_t unused;
  bool operator<(const SessionKey& o) const {
    return session_id != o.session_id ? session_id < o.session_id : index < o.index;
  }
};

// A candidate predecessor of request `index`: kind 0 its parent, kind 1 the previous request of its session
// (the first of a request's candidates in this order is its predecessor).
struct PredKey {
  int32_t index;
  int32_t kind;
  int32_t pred;
  bool operator<(const PredKey& o) const { return index != o.index ? index < o.index : kind < o.kind; }
};

// Request `index` follows `pred`; sorted by predecessor, they are the successor lists.
struct EdgeKey {
  int32_t pred;
  int32_t index;
  int64_t arrival_ns;  // of `index`
  bool operator<(const EdgeKey& o) const { return pred != o.pred ? pred < o.pred : index < o.index; }
};

struct ThinkKey {
  int32_t index;
  int32_t unused;
  int64_t think_ns;
  bool operator<(const ThinkKey& o) const { return index < o.index; }
};

// The first error of a visit (its callback cannot return one).
void Keep(absl::Status status, absl::Status* first) {
  if (first->ok()) *first = std::move(status);
}

}  // namespace

struct SessionChains::Files {
  explicit Files(const Options& o)
      : links(o.page_records, o.cache_pages),
        ids(std::make_unique<SortedRecordSpill<IdKey>>(o.run_records)),
        sessions(std::make_unique<SortedRecordSpill<SessionKey>>(o.run_records)),
        records(o.page_records, o.cache_pages),
        successors(o.page_records, o.cache_pages),
        roots(o.page_records, o.cache_pages) {}

  RecordFile<LinkRecord> links;
  std::unique_ptr<SortedRecordSpill<IdKey>> ids;  // released once joined
  std::unique_ptr<SortedRecordSpill<SessionKey>> sessions;
  RecordFile<SessionChainRecord> records;
  RecordFile<int32_t> successors;
  RecordFile<int32_t> roots;
};

SessionLink SessionLinkOf(const Request& request) {
  SessionLink link;
  link.request_id = request.request_id;
  link.session_id = request.session_id;
  link.parent_id = request.parent_id;
  link.arrival_ns = request.arrival_ns;
  if (!request.tool_calls.empty()) {
    link.tool_ns = 0;
    for (const ToolCall& call : request.tool_calls) link.tool_ns += std::max<int64_t>(0, call.duration_ns);
  }
  return link;
}

SessionChains::SessionChains() : SessionChains(Options()) {}
SessionChains::SessionChains(const Options& options)
    : options_(options), files_(std::make_unique<Files>(options)) {}
SessionChains::~SessionChains() = default;

void SessionChains::Add(const SessionLink& link, int64_t spill_offset) {
  KVSIM_CHECK(!built_) << "SessionChains::Add after Build";
  KVSIM_CHECK(size_ < INT32_MAX) << "SessionChains of 2^31 requests";
  const int32_t i = size_++;
  files_->links.Append(LinkRecord{spill_offset, link.arrival_ns, link.tool_ns});
  files_->ids->Add(IdKey{link.request_id, 0, i, link.session_id});
  if (link.session_id >= 0) {
    if (link.parent_id >= 0) files_->ids->Add(IdKey{static_cast<uint64_t>(link.parent_id), 1, i, link.session_id});
    files_->sessions->Add(SessionKey{link.session_id, i, 0});
  }
}

absl::Status SessionChains::Build(absl::string_view source) {
  KVSIM_CHECK(!built_) << "SessionChains::Build twice";
  built_ = true;
  Files& f = *files_;
  KVSIM_RETURN_IF_ERROR(f.links.status());
  const int64_t run = options_.run_records;

  // Ids: repeated ids, and each parent reference to an earlier request of the same session.
  SortedRecordSpill<PredKey> candidates(run);
  int32_t repeat_index = -1;
  uint64_t repeat_id = 0;
  bool have_request = false;
  IdKey request{};
  KVSIM_RETURN_IF_ERROR(f.ids->Visit([&](const IdKey& k) {
    const bool same_id = have_request && request.key == k.key;
    if (k.kind == 0) {
      if (!same_id) {
        have_request = true;
        request = k;
      } else if (repeat_index < 0 || k.index < repeat_index) {
        repeat_index = k.index;
        repeat_id = k.key;
      }
    } else if (same_id && request.index < k.index && request.session_id == k.session_id) {
      candidates.Add(PredKey{k.index, 0, request.index});
    }
  }));
  f.ids.reset();
  if (repeat_index >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": request_id ", repeat_id, " appears twice; closed-loop sessions need unique ids"));
  }
  // Sessions: each request's previous request of its session.
  bool have_session = false;
  SessionKey previous{};
  KVSIM_RETURN_IF_ERROR(f.sessions->Visit([&](const SessionKey& k) {
    if (have_session && previous.session_id == k.session_id) candidates.Add(PredKey{k.index, 1, previous.index});
    have_session = true;
    previous = k;
  }));
  f.sessions.reset();

  // Each request's predecessor: its first candidate.
  absl::Status failed;
  SortedRecordSpill<EdgeKey> edges(run);
  int32_t last_index = -1;
  KVSIM_RETURN_IF_ERROR(candidates.Visit([&](const PredKey& k) {
    if (k.index == last_index) return;
    last_index = k.index;
    absl::StatusOr<LinkRecord> link = f.links.Get(k.index);
    if (!link.ok()) return Keep(link.status(), &failed);
    edges.Add(EdgeKey{k.pred, k.index, link->arrival_ns});
  }));
  KVSIM_RETURN_IF_ERROR(failed);

  // Successor lists (edges by predecessor), their starts per request, and each successor's think time.
  RecordFile<int32_t> begins(options_.page_records, options_.cache_pages);  // per request, plus one
  SortedRecordSpill<ThinkKey> thinks(run);
  int32_t num_edges = 0;
  KVSIM_RETURN_IF_ERROR(edges.Visit([&](const EdgeKey& e) {
    while (begins.size() <= e.pred) begins.Append(num_edges);
    f.successors.Append(e.index);
    ++num_edges;
    absl::StatusOr<LinkRecord> p = f.links.Get(e.pred);
    if (!p.ok()) return Keep(p.status(), &failed);
    const int64_t think_ns = p->tool_ns >= 0 ? p->tool_ns : std::max<int64_t>(0, e.arrival_ns - p->arrival_ns);
    thinks.Add(ThinkKey{e.index, 0, think_ns});
  }));
  KVSIM_RETURN_IF_ERROR(failed);
  while (begins.size() <= size_) begins.Append(num_edges);
  KVSIM_RETURN_IF_ERROR(begins.status());

  // The records in trace order; requests without a predecessor are the roots.
  int32_t next = 0;
  const auto emit = [&](int32_t i, const ThinkKey* think) -> absl::Status {
    KVSIM_ASSIGN_OR_RETURN(const LinkRecord link, f.links.Get(i));
    KVSIM_ASSIGN_OR_RETURN(const int32_t begin, begins.Get(i));
    KVSIM_ASSIGN_OR_RETURN(const int32_t end, begins.Get(i + 1));
    f.records.Append(SessionChainRecord{link.spill_offset, think == nullptr ? 0 : think->think_ns, begin, end - begin});
    if (think == nullptr) {
      f.roots.Append(i);
      ++num_roots_;
    }
    return absl::OkStatus();
  };
  KVSIM_RETURN_IF_ERROR(thinks.Visit([&](const ThinkKey& t) {
    while (failed.ok() && next < t.index) Keep(emit(next++, nullptr), &failed);
    if (failed.ok()) Keep(emit(next++, &t), &failed);
  }));
  KVSIM_RETURN_IF_ERROR(failed);
  while (next < size_) KVSIM_RETURN_IF_ERROR(emit(next++, nullptr));
  KVSIM_RETURN_IF_ERROR(f.records.status());
  KVSIM_RETURN_IF_ERROR(f.successors.status());
  return f.roots.status();
}

absl::StatusOr<int32_t> SessionChains::root(int32_t k) {
  KVSIM_CHECK(built_) << "SessionChains::root before Build";
  return files_->roots.Get(k);
}

absl::StatusOr<SessionChainRecord> SessionChains::Get(int32_t i) {
  KVSIM_CHECK(built_) << "SessionChains::Get before Build";
  return files_->records.Get(i);
}

absl::Status SessionChains::Successors(int32_t i, std::vector<int32_t>* out) {
  out->clear();
  KVSIM_ASSIGN_OR_RETURN(const SessionChainRecord record, Get(i));
  for (int32_t k = 0; k < record.successor_count; ++k) {
    KVSIM_ASSIGN_OR_RETURN(const int32_t next, files_->successors.Get(record.successor_begin + k));
    out->push_back(next);
  }
  return absl::OkStatus();
}

}  // namespace kvsim
