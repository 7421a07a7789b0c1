// Where a command's output goes, with every write checked: standard output, or a file that is
// written beside its final name and renamed into place by commit(), so that a run that fails (or
// is killed) never leaves a truncated file and never replaces an existing one with nothing.
// A failed write throws WriteError naming the output ("out.srt: write failed: No space left on
// device"): output lost without a non-zero exit is the one thing a tool must never do.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "voxrt/error.h"

namespace voxrt::cli {

// An output that could not be written: what follows it would be lost too, so commands stop.
class WriteError : public Error {
 public:
  using Error::Error;
};

class OutputSink {
 public:
  // Standard output, named "standard output" in messages.
  static std::unique_ptr<OutputSink> standard_output();
  // A file. A regular file (or a new one) is written to a temporary file in the same directory and
  // renamed over `path` by commit(); anything else that exists (a device such as /dev/null, a FIFO)
  // is written directly, since it cannot be replaced. Throws Error if the temporary cannot be made.
  static std::unique_ptr<OutputSink> file(const std::filesystem::path& path);
  // What -o NAME means: standard output for "" (not given) and "-" (the usual name for it), else file(NAME).
  static std::unique_ptr<OutputSink> standard_output_or_file(const std::string& name);

  ~OutputSink();  // a file not committed: its temporary is removed, the target left as it was
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  void write(std::string_view text);
  // Makes the output final: the file is synced and renamed into place. Writes after commit() are
  // an error; commit() twice is harmless.
  void commit();
  // The temporary path a writer that needs a file name of its own (libsndfile) may write to
  // instead of write(); empty for outputs written directly.
  const std::filesystem::path& temporary_path() const { return temp_; }
  const std::string& name() const { return name_; }

 private:
  OutputSink(int fd, std::string name, std::filesystem::path target, std::filesystem::path temp, bool owns_fd);
  [[noreturn]] void fail(const std::string& what) const;

  int fd_;
  std::string name_;
  std::filesystem::path target_, temp_;
  bool owns_fd_;
  bool committed_ = false;
};

// True when both paths name the same existing file (same device and inode): an output that would
// overwrite an input. False if either does not exist.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace voxrt::cli
