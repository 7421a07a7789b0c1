#include "cli/stdin_audio.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "cli/temporary_files.h"
#include "cli/usage.h"
#include "common/error.h"

namespace voxrt::cli {

StdinAudio::StdinAudio() {
  if (isatty(STDIN_FILENO))
    throw UsageError("standard input is a terminal: pipe audio in (voxrt transcribe - < talk.flac) or name a file");
  std::string pattern = (std::filesystem::temp_directory_path() / "voxrt-stdin-XXXXXX").string();
  const int fd = mkstemp(pattern.data());
  if (fd < 0) throw Error(pattern + ": cannot create a temporary file for standard input: " + std::strerror(errno));
  path_ = pattern;
  track_temporary(path_);
  try {
    copy_stdin_to(fd);
  } catch (...) {
    close(fd);
    remove();
    throw;
  }
  if (close(fd) != 0) {
    const std::string why = std::strerror(errno);
    remove();
    throw Error(path_.string() + ": cannot hold standard input: " + why);
  }
}

void StdinAudio::copy_stdin_to(int fd) const {
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, buf.data(), buf.size());
    if (n == 0) return;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string(kStdinName) + ": read failed: " + std::strerror(errno));
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = write(fd, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw Error(path_.string() + ": cannot hold standard input: " + std::strerror(errno));
      done += w;
    }
  }
}

void StdinAudio::remove() const {
  unlink(path_.c_str());
  untrack_temporary(path_);
}

StdinAudio::~StdinAudio() { remove(); }

std::string StdinAudio::named(const std::string& message) const {
  std::string out = message;
  const std::string temp = path_.string();
  for (size_t at = out.find(temp); at != std::string::npos; at = out.find(temp, at + std::strlen(kStdinName)))
    out.replace(at, temp.size(), kStdinName);
  return out;
}

}  // namespace voxrt::cli
