// The `kvsim` command line: sub-commands register themselves in tools/*_command.cc.
#include <iostream>

#include "tools/command.h"
#include "util/heap_tuning.h"

int main(int argc, char** argv) {
  kvsim::TuneHeapForBatchRun();
  return kvsim::RunKvsim(argc, argv, std::cout, std::cerr);
}
