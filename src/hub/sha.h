// Streaming message digests (OpenSSL EVP) used to verify downloads: sha256 for LFS files, sha1 for
// the git blob ids of small files. Bytes are fed as they arrive so a multi-GB checkpoint is never
// read twice, and a resumed download only re-reads the part already on disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;
struct evp_md_st;

namespace voxrt::hub {

class Digest {
 public:
  static Digest sha256();
  static Digest sha1();

  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Lower-case hex of the digest so far. Leaves the running state untouched (it works on a copy),
  // so it may be called at any point.
  std::string hex() const;
  // Starts over as if freshly constructed (used when a server ignores a resume request).
  void reset();

 private:
  explicit Digest(const evp_md_st* md);
  struct CtxFree {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  const evp_md_st* md_;
  std::unique_ptr<evp_md_ctx_st, CtxFree> ctx_;
};

// Feeds the first `limit` bytes of `path` into `digest` and returns how many were read (fewer
// when the file is shorter). Throws Error when the file cannot be read.
uint64_t digest_file(const std::filesystem::path& path, Digest& digest, uint64_t limit = UINT64_MAX);

}  // namespace voxrt::hub
