#include "hub/sha.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace voxrt::hub {

namespace {

// EVP failures only happen on allocation failure or a broken OpenSSL install; still not an abort.
void check_evp(int ok, const char* what) {
  if (ok != 1) throw Error(std::string("OpenSSL: ") + what + " failed");
}

}  // namespace

void Digest::CtxFree::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Digest::Digest(const evp_md_st* md) : md_(md), ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw Error("OpenSSL: cannot allocate a digest context");
  reset();
}

Digest Digest::sha256() { return Digest(EVP_sha256()); }
Digest Digest::sha1() { return Digest(EVP_sha1()); }

void Digest::reset() { check_evp(EVP_DigestInit_ex(ctx_.get(), md_, nullptr), "digest init"); }

void Digest::update(const void* data, size_t n) {
  check_evp(EVP_DigestUpdate(ctx_.get(), data, n), "digest update");
}

std::string Digest::hex() const {
  std::unique_ptr<EVP_MD_CTX, CtxFree> copy(EVP_MD_CTX_new());
  if (!copy) throw Error("OpenSSL: cannot allocate a digest context");
  check_evp(EVP_MD_CTX_copy_ex(copy.get(), ctx_.get()), "digest copy");
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  check_evp(EVP_DigestFinal_ex(copy.get(), out, &len), "digest final");
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

uint64_t digest_file(const std::filesystem::path& path, Digest& digest, uint64_t limit) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error(path.string() + ": cannot open for reading: " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  while (total < limit) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), limit - total));
    size_t got = std::fread(buf.data(), 1, want, f.get());
    digest.update(buf.data(), got);
    total += got;
    if (got < want) break;
  }
  if (std::ferror(f.get())) throw Error(path.string() + ": read error: " + std::strerror(errno));
  return total;
}

}  // namespace voxrt::hub
