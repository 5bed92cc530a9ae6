#include "tools/common_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, config, "",
          "experiment config (text proto); empty = the default (Llama-3.1-8B on H200, prefix reuse, LRU)");
ABSL_FLAG(std::string, trace, "", "request trace file, any supported format (see 'kvsim help import')");
ABSL_FLAG(std::string, trace_format, "", "trace importer name; empty = detect from the content");
ABSL_FLAG(std::string, out, "",
          "output directory (created if missing); for commands that write one file (gen), that file");
ABSL_FLAG(bool, json, false, "print JSON instead of a table");
ABSL_FLAG(uint64_t, seed, 0, "seed of every random choice; recorded in the results");
