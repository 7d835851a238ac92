// Helpers for end-to-end tests: run a program and capture its output.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace nnfuse::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal (a crash)
  int signal = 0;
  std::string output;  // stdout and stderr together
};

// Runs argv[0] with the arguments (no shell), waiting at most timeout_s seconds.
CommandResult run_command(const std::vector<std::string>& argv, int timeout_s = 600);

// A fresh empty directory under the system temp dir.
std::string make_temp_dir(const std::string& stem);

// main() of the end-to-end tests: initializes GoogleTest, reads each `--NAME VALUE` of `flags`
// into its string, and runs every test; prints `usage` and returns 2 when a flag named in
// `required` is missing.
int test_main(int argc, char** argv, const std::map<std::string, std::string*>& flags,
              const std::vector<std::string>& required, const char* usage);

}  // namespace nnfuse::testing
