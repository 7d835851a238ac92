#include "tests/test_support.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace nnfuse::testing {

CommandResult run_command(const std::vector<std::string>& argv, int timeout_s) {
  CommandResult r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  char buf[4096];
  for (;;) {
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.output += "\n[killed: timeout]";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

std::string make_temp_dir(const std::string& stem) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (stem + "-XXXXXX")).string();
  char* p = mkdtemp(tmpl.data());
  return p ? std::string(p) : std::string();
}

int test_main(int argc, char** argv, const std::map<std::string, std::string*>& flags,
              const std::vector<std::string>& required, const char* usage) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    auto it = flags.find(argv[i]);
    if (it != flags.end()) *it->second = argv[i + 1];
  }
  for (const std::string& f : required) {
    auto it = flags.find(f);
    if (it == flags.end() || it->second->empty()) {
      std::fprintf(stderr, "usage: %s\n", usage);
      return 2;
    }
  }
  return RUN_ALL_TESTS();
}

}  // namespace nnfuse::testing
