#include "server/spooled_body.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "common/error.h"

namespace voxrt::server {

namespace {

class SpoolCategory : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "voxrt.spool"; }
  std::string message(int ev) const override { return std::generic_category().message(ev); }
};

}  // namespace

const boost::system::error_category& spool_category() {
  static const SpoolCategory category;
  return category;
}

std::string spool_directory() {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (!ec) return dir.string();
  // The one libstdc++ looked at and found no directory.
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"})
    if (const char* value = std::getenv(name)) return value;
  return "/tmp";
}

int spool_error_status(const boost::beast::error_code& ec) {
  const int e = ec.value();
  return e == ENOSPC || e == EDQUOT || e == EFBIG ? 507 : 503;
}

// An unlinked temporary file holding a body: gone from the disk when its descriptor closes, even
// if the server is killed.
class SpoolFile {
 public:
  // nullptr and `error` set (an errno) when no file can be made.
  static std::shared_ptr<SpoolFile> create(int& error) {
    const std::string dir = spool_directory();
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      // A filesystem without O_TMPFILE: a named file, unlinked at once.
      std::string pattern = dir + "/voxrt-body-XXXXXX";
      fd = ::mkostemp(pattern.data(), O_CLOEXEC);
      if (fd < 0) {
        error = errno;
        return nullptr;
      }
      ::unlink(pattern.c_str());
    }
    return std::shared_ptr<SpoolFile>(new SpoolFile(fd));
  }
  ~SpoolFile() {
    if (map_) ::munmap(const_cast<char*>(map_), size_);
    ::close(fd_);
  }
  SpoolFile(const SpoolFile&) = delete;
  SpoolFile& operator=(const SpoolFile&) = delete;

  size_t size() const { return size_; }

  // Appends; false and `error` set (an errno) when the disk takes no more.
  bool write(const char* data, size_t n, int& error) {
    while (n > 0) {
      const ssize_t done = ::write(fd_, data, n);
      if (done < 0 && errno == EINTR) continue;
      if (done <= 0) {
        error = done < 0 ? errno : ENOSPC;
        return false;
      }
      data += done;
      n -= static_cast<size_t>(done);
      size_ += static_cast<size_t>(done);
    }
    return true;
  }

  // Mapped once, by whichever thread asks first; the file is complete by then.
  std::string_view view() {
    if (size_ == 0) return {};
    std::call_once(mapped_, [this] {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
      if (p == MAP_FAILED)
        throw Error("cannot map the request body (" + std::to_string(size_) + " bytes) from its temporary file: " +
                    std::generic_category().message(errno));
      map_ = static_cast<const char*>(p);
    });
    return {map_, size_};
  }

 private:
  explicit SpoolFile(int fd) : fd_(fd) {}
  int fd_;
  size_t size_ = 0;
  std::once_flag mapped_;
  const char* map_ = nullptr;
};

size_t SpooledBody::value_type::size() const { return file_ ? file_->size() : memory_.size(); }

std::string_view SpooledBody::value_type::view() const { return file_ ? file_->view() : std::string_view(memory_); }

void SpooledBody::reader::init(const boost::optional<std::uint64_t>& content_length, boost::beast::error_code& ec) {
  ec = {};
  body_.memory_.clear();
  body_.file_.reset();
  // A body known to be large goes to disk from its first byte.
  if (content_length && *content_length > kInMemoryBytes) return spill(ec);
  if (content_length) body_.memory_.reserve(static_cast<size_t>(*content_length));
}

void SpooledBody::reader::append(const char* data, size_t n, boost::beast::error_code& ec) {
  if (!body_.file_ && body_.memory_.size() + n <= kInMemoryBytes) {
    body_.memory_.append(data, n);
    return;
  }
  if (!body_.file_) {
    spill(ec);
    if (ec) return;
  }
  int error = 0;
  if (!body_.file_->write(data, n, error)) ec = {error, spool_category()};
}

void SpooledBody::reader::spill(boost::beast::error_code& ec) {
  int error = 0;
  std::shared_ptr<SpoolFile> file = SpoolFile::create(error);
  if (!file || !file->write(body_.memory_.data(), body_.memory_.size(), error)) {
    ec = {error, spool_category()};
    return;
  }
  std::string().swap(body_.memory_);  // its memory goes back
  body_.file_ = std::move(file);
}

}  // namespace voxrt::server
