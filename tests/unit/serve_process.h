// `voxrt serve` as a process of its own, for the tests of how it starts and stops: started on a free
// port with the tiny model on the CPU, its standard error read until it is ready (the port it says
// it listens on), signalled, and waited for with a bound (a server that does not stop fails the
// test instead of hanging it).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "test_paths.h"

namespace voxrt::test {

class ServeProcess {
 public:
  // Starts `voxrt serve` with `args` after the model and device ones; returns once it says it is
  // ready (port() is then set) or has ended (port() stays 0).
  explicit ServeProcess(const std::vector<std::string>& args) {
    int err[2];
    if (pipe(err) != 0) throw std::runtime_error("pipe failed");
    const std::string binary = voxrt_binary().string(), model = model_dir();
    std::vector<std::string> argv = {binary, "serve", "--model", model, "--device", "cpu", "--threads", "1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(err[1], 2);
      close(err[0]);
      std::vector<char*> c;
      for (std::string& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(binary.c_str(), c.data());
      _exit(127);
    }
    close(err[1]);
    err_ = err[0];
    while (said_.find("voxrt: ready") == std::string::npos && read_some(std::chrono::seconds(60))) {
    }
    // "voxrt: serving http://HOST:PORT (loading the model)": the port after the URL's last colon.
    const size_t at = said_.find("serving http://");
    const size_t end = at == std::string::npos ? at : said_.find(' ', at + 8);
    const size_t colon = end == std::string::npos ? end : said_.rfind(':', end);
    if (colon != std::string::npos && colon > at && said_.find("voxrt: ready") != std::string::npos)
      port_ = static_cast<uint16_t>(std::stoi(said_.substr(colon + 1)));
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (err_ >= 0) close(err_);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  uint16_t port() const { return port_; }
  void signal(int sig) { kill(pid_, sig); }
  // Waits at most `limit` for the process to end; its exit status (or 128 + signal), -1 if it did
  // not end in time.
  int wait_exit(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        while (read_some(std::chrono::milliseconds(0))) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= until) return -1;
      read_some(std::chrono::milliseconds(10));
    }
  }
  // What it wrote to standard error so far.
  const std::string& said() {
    while (read_some(std::chrono::milliseconds(0))) {
    }
    return said_;
  }

 private:
  // Reads what standard error has within `wait`; false at its end or when nothing came.
  bool read_some(std::chrono::milliseconds wait) {
    pollfd p{err_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(err_, buf, sizeof buf);
    if (n <= 0) return false;
    said_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int err_ = -1;
  bool exited_ = false;
  uint16_t port_ = 0;
  std::string said_;
};

}  // namespace voxrt::test
