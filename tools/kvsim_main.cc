// The `kvsim` command line: sub-commands register themselves in tools/*_command.cc.
#include <iostream>

#include "tools/command.h"
#include "util/heap_tuning.h"

int main(int argc, char** argv) {
  kvsim::TuneHeapForBatchRun();
  int code = kvsim::RunKvsim(argc, argv, std::cout, std::cerr);
  // A report that could not be written is a failure, whatever the command did (a full disk, a closed pipe).
  std::cout.flush();
  if (!std::cout && code == 0) {
    std::cerr << "kvsim: writing the report to standard output failed\n";
    code = 1;
  }
  return code;
}
