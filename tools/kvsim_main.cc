// The `kvsim` command line: sub-commands register themselves in tools/*_command.cc.
#include <iostream>

#include "tools/command.h"

int main(int argc, char** argv) { return kvsim::RunKvsim(argc, argv, std::cout, std::cerr); }
