// A request body (a Beast body type) whose memory does not grow with its size: up to 1 MiB stays
// in memory; a larger one goes, as it arrives, to an unlinked temporary file in the temporary
// directory ($TMPDIR, else /tmp), which the handler reads through a read-only mapping. A 100 MB
// upload costs page cache, not the server's heap.
#pragma once

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional/optional.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace voxrt::server {

class SpoolFile;

struct SpooledBody {
  // Bodies up to this size stay in memory.
  static constexpr size_t kInMemoryBytes = size_t{1} << 20;

  class reader;

  // The body as the handler sees it. Copies share the file.
  class value_type {
   public:
    size_t size() const;
    bool on_disk() const { return file_ != nullptr; }
    // The whole body. A body on disk is mapped at the first call and unmapped with the last copy
    // of the value; throws Error when the mapping fails.
    std::string_view view() const;

   private:
    friend class reader;
    std::string memory_;
    std::shared_ptr<SpoolFile> file_;
  };

  // Fills a value as Beast's parser hands it the body's bytes. A failure to spool (no temporary
  // directory, a full disk) is an error of spool_category(), which the parser passes on.
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>& content_length, boost::beast::error_code& ec);
    template <class ConstBufferSequence>
    size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      size_t taken = 0;
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        append(static_cast<const char*>(b.data()), b.size(), ec);
        if (ec) return taken;
        taken += b.size();
      }
      return taken;
    }
    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    void append(const char* data, size_t n, boost::beast::error_code& ec);
    void spill(boost::beast::error_code& ec);  // from memory to a new temporary file
    value_type& body_;
  };
};

// Errors of spooling a body: the value is the errno of the failed call.
const boost::system::error_category& spool_category();
// The directory temporary files go to, as named to a user (also when it does not exist).
std::string spool_directory();
// 507 when the disk has no room (ENOSPC, EDQUOT, EFBIG), 503 otherwise (no such directory, no
// permission): for an error of spool_category().
int spool_error_status(const boost::beast::error_code& ec);

}  // namespace voxrt::server
