#include "cli/output_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "cli/temporary_files.h"
#include "common/error.h"

namespace voxrt::cli {
namespace {

std::string errno_text() { return std::strerror(errno); }

// A new file beside `target` (same directory, so rename() is atomic), named after it and hidden.
// O_EXCL so that two runs, or a file of that name, are never clobbered.
int create_temporary(const std::filesystem::path& target, std::filesystem::path& temp) {
  std::random_device seed;
  std::mt19937_64 rng(seed());
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[20];
    std::snprintf(suffix, sizeof suffix, "%012llx", static_cast<unsigned long long>(rng() & 0xffffffffffffULL));
    temp = dir / ("." + target.filename().string() + "." + suffix + ".part");
    // 0666 less the umask: the permissions any new file of this user gets.
    const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

OutputSink::OutputSink(int fd, std::string name, std::filesystem::path target, std::filesystem::path temp,
                       bool owns_fd)
    : fd_(fd), name_(std::move(name)), target_(std::move(target)), temp_(std::move(temp)), owns_fd_(owns_fd) {
  if (!temp_.empty()) track_temporary(temp_);
}

std::unique_ptr<OutputSink> OutputSink::standard_output() {
  return std::unique_ptr<OutputSink>(new OutputSink(STDOUT_FILENO, "standard output", {}, {}, false));
}

std::unique_ptr<OutputSink> OutputSink::standard_output_or_file(const std::string& name) {
  return name.empty() || name == "-" ? standard_output() : file(name);
}

std::unique_ptr<OutputSink> OutputSink::file(const std::filesystem::path& path) {
  const std::string name = path.string();
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error(name + ": is a directory");
    if (!S_ISREG(st.st_mode)) {
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) throw Error(name + ": cannot open for writing: " + errno_text());
      return std::unique_ptr<OutputSink>(new OutputSink(fd, name, path, {}, true));
    }
  }
  // Write to the file a symbolic link points at, not over the link.
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::weakly_canonical(path, ec);
  std::filesystem::path temp;
  const int fd = create_temporary(ec ? path : target, temp);
  if (fd < 0) {
    const std::string why = errno_text();
    const std::filesystem::path dir = (ec ? path : target).parent_path();
    throw Error(name + ": cannot create a file in " + (dir.empty() ? std::string(".") : dir.string()) + ": " + why);
  }
  return std::unique_ptr<OutputSink>(new OutputSink(fd, name, ec ? path : target, temp, true));
}

OutputSink::~OutputSink() {
  if (owns_fd_ && fd_ >= 0) close(fd_);
  if (!temp_.empty() && !committed_) {
    unlink(temp_.c_str());
    untrack_temporary(temp_);
  }
}

void OutputSink::fail(const std::string& what) const { throw WriteError(name_ + ": " + what + ": " + errno_text()); }

void OutputSink::write(std::string_view text) {
  if (committed_) throw WriteError(name_ + ": written after it was closed");
  while (!text.empty()) {
    const ssize_t n = ::write(fd_, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

void OutputSink::commit() {
  if (committed_) return;
  if (!temp_.empty()) {
    // The data reaches the disk before the name does: a crash after the rename never shows an
    // empty file under the final name.
    if (fsync(fd_) != 0) fail("write failed");
    const int fd = fd_;
    fd_ = -1;
    if (close(fd) != 0) fail("write failed");
    if (std::rename(temp_.c_str(), target_.c_str()) != 0) fail("cannot rename " + temp_.string() + " into place");
    untrack_temporary(temp_);
  } else if (owns_fd_) {
    const int fd = fd_;
    fd_ = -1;
    if (close(fd) != 0) fail("write failed");
  }
  committed_ = true;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  struct stat sa {}, sb {};
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace voxrt::cli
