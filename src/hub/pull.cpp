#include "hub/pull.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "common/error.h"
#include "hub/http.h"
#include "hub/progress.h"
#include "hub/sha.h"

namespace voxrt {

namespace fs = std::filesystem;
using hub::Digest;
using hub::HttpHead;
using hub::HttpRequest;
using hub::HttpResult;

namespace {

const char* const kDefaultEndpoint = "https://huggingface.co";
const char* const kMistralLayout[] = {"params.json", "consolidated.safetensors", "tekken.json"};

// An environment variable, empty when unset: an empty value means "not configured" everywhere.
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

// ---- names and URLs --------------------------------------------------------------------------

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// "owner/name" (or a bare legacy "name"); anything else could not be a hub repo, and checking it
// here also keeps the default directory name free of '..' and separators.
void check_repo_id(const std::string& repo) {
  auto slash = repo.find('/');
  std::string owner = slash == std::string::npos ? "" : repo.substr(0, slash);
  std::string name = slash == std::string::npos ? repo : repo.substr(slash + 1);
  auto valid_part = [](const std::string& s) {
    if (s.empty() || s == "." || s == "..") return false;
    for (char c : s)
      if (!is_name_char(c)) return false;
    return true;
  };
  if (!valid_part(name) || (slash != std::string::npos && !valid_part(owner))) {
    throw Error("invalid repo id '" + repo +
                "': expected owner/name, e.g. mistralai/Voxtral-Mini-4B-Realtime-2602");
  }
}

// A wanted file is joined onto the model directory, so it must stay inside it.
void check_file_name(const std::string& path) {
  fs::path p(path);
  bool ok = !path.empty() && p.is_relative() && path.find('\\') == std::string::npos;
  for (const auto& part : p) ok = ok && part != ".." && part != "." && !part.empty();
  if (!ok) throw Error("invalid file name '" + path + "': expected a relative path inside the repo");
}

// Percent-encodes everything but unreserved characters (and '/' when keep_slash): a revision like
// "refs/pr/1" must travel as one path segment, a file path as several.
std::string url_encode(const std::string& s, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Where and how to ask the hub. Built once per pull.
struct Hub {
  std::string endpoint;  // no trailing '/'
  std::string repo;
  std::string revision;
  std::vector<std::string> headers;
  long connect_timeout_s;
  std::string unreachable_hint;  // names where the endpoint came from: --endpoint, HF_ENDPOINT or the default

  std::string tree_url() const {
    return endpoint + "/api/models/" + url_encode(repo, true) + "/tree/" + url_encode(revision, false);
  }
  std::string file_url(const std::string& path) const {
    return endpoint + "/" + url_encode(repo, true) + "/resolve/" + url_encode(revision, false) + "/" +
           url_encode(path, true);
  }
  HttpRequest request(const std::string& url) const {
    HttpRequest req;
    req.url = url;
    req.headers = headers;
    req.connect_timeout_s = connect_timeout_s;
    req.unreachable_hint = unreachable_hint;
    return req;
  }
};

Hub make_hub(const PullOptions& opts) {
  Hub hub;
  hub.endpoint = !opts.endpoint.empty() ? opts.endpoint : env("HF_ENDPOINT");
  if (!opts.endpoint.empty())
    hub.unreachable_hint = "no network, or a wrong --endpoint?";
  else if (!hub.endpoint.empty())
    hub.unreachable_hint = "no network, or a wrong HF_ENDPOINT=" + hub.endpoint + "?";
  else
    hub.unreachable_hint = "no network? --endpoint URL or HF_ENDPOINT=URL sets a mirror";
  if (hub.endpoint.empty()) hub.endpoint = kDefaultEndpoint;
  while (hub.endpoint.ends_with('/')) hub.endpoint.pop_back();
  if (!hub.endpoint.starts_with("http://") && !hub.endpoint.starts_with("https://")) {
    throw Error("invalid hub endpoint '" + hub.endpoint + "': expected an http:// or https:// URL");
  }
  hub.repo = opts.repo;
  hub.revision = opts.revision.empty() ? "main" : opts.revision;
  // curl drops this header when a redirect leaves the host, so the CDN never sees the token.
  std::string token = trim(env("HF_TOKEN"));
  if (!token.empty()) hub.headers.push_back("Authorization: Bearer " + token);
  hub.connect_timeout_s = opts.connect_timeout_s;
  return hub;
}

// ---- the listing -----------------------------------------------------------------------------

// One file as the hub lists it: its size and the checksum its content must have.
struct RemoteFile {
  std::string path;
  uint64_t size = 0;
  bool lfs = false;     // true: digest is the sha256 of the content; false: the git blob sha1
  std::string digest;   // lower-case hex

  const char* algorithm() const { return lfs ? "sha256" : "sha1"; }

  // A digest ready for the content bytes. Git hashes a blob as sha1("blob <size>\0" + content);
  // seeding the header with the expected size is fine since a size mismatch fails first.
  Digest start_digest() const {
    if (lfs) return Digest::sha256();
    Digest d = Digest::sha1();
    std::string header = "blob " + std::to_string(size);
    d.update(header.data(), header.size() + 1);  // includes the NUL
    return d;
  }
};

bool is_hex(const std::string& s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

RemoteFile parse_entry(const nlohmann::json& e) {
  RemoteFile f;
  f.path = e.at("path").get<std::string>();
  f.size = e.at("size").get<uint64_t>();
  if (e.contains("lfs") && e["lfs"].is_object()) {
    f.lfs = true;
    f.digest = lower(e["lfs"].at("oid").get<std::string>());
    if (e["lfs"].contains("size")) f.size = e["lfs"]["size"].get<uint64_t>();
  } else {
    f.digest = lower(e.at("oid").get<std::string>());
  }
  if (!is_hex(f.digest, f.lfs ? 64 : 40)) {
    throw Error("entry '" + f.path + "' has a malformed " + f.algorithm() + " '" + f.digest + "'");
  }
  return f;
}

std::map<std::string, RemoteFile> parse_listing(const std::string& body) {
  std::map<std::string, RemoteFile> files;
  nlohmann::json doc = nlohmann::json::parse(body);
  if (!doc.is_array()) throw Error("expected a JSON array");
  for (const auto& e : doc) {
    if (!e.is_object() || e.value("type", "") != "file") continue;  // directories
    RemoteFile f = parse_entry(e);
    files[f.path] = f;
  }
  return files;
}

std::map<std::string, RemoteFile> fetch_listing(const Hub& hub) {
  std::string url = hub.tree_url();
  std::string body = hub::http_get_text(hub.request(url));
  try {
    return parse_listing(body);
  } catch (const nlohmann::json::exception& e) {
    throw Error("file listing from " + url + " is not what the hub sends: " + e.what());
  } catch (const Error& e) {
    throw Error("file listing from " + url + ": " + e.what());
  }
}

std::vector<RemoteFile> select_files(const std::map<std::string, RemoteFile>& listing,
                                     const PullOptions& opts, const Hub& hub) {
  std::vector<std::string> wanted = opts.files;
  if (wanted.empty()) wanted.assign(std::begin(kMistralLayout), std::end(kMistralLayout));
  std::vector<RemoteFile> files;
  for (const auto& name : wanted) {
    check_file_name(name);
    auto it = listing.find(name);
    if (it == listing.end()) {
      throw Error(name + ": not in " + hub.repo + " at revision " + hub.revision +
                  " (is the repo or the file name right?)");
    }
    files.push_back(it->second);
  }
  return files;
}

// ---- local files -----------------------------------------------------------------------------

fs::path part_path(const fs::path& final_path) {
  fs::path p = final_path;
  p += ".part";
  return p;
}

std::optional<uint64_t> regular_file_size(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  uint64_t size = fs::file_size(p, ec);
  if (ec) return std::nullopt;
  return size;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

// True when `path` already holds exactly the listed content.
bool matches(const fs::path& path, const RemoteFile& f) {
  auto size = regular_file_size(path);
  if (!size || *size != f.size) return false;
  Digest d = f.start_digest();
  hub::digest_file(path, d);
  return d.hex() == f.digest;
}

// The .part being written. Opened for appending so a resume continues at its end; truncate()
// starts it over when the server ignores the resume request.
class PartFile {
 public:
  PartFile(const fs::path& path, bool append) : path_(path) {
    f_ = std::fopen(path.c_str(), append ? "ab" : "wb");
    if (!f_) throw Error(path.string() + ": cannot open for writing: " + std::strerror(errno));
  }
  ~PartFile() {
    if (f_) std::fclose(f_);
  }
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;

  void write(const char* data, size_t n) {
    if (std::fwrite(data, 1, n, f_) != n) fail("write");
  }
  void truncate() {
    if (std::fflush(f_) != 0 || ftruncate(fileno(f_), 0) != 0) fail("truncate");
  }
  // Flushes and closes; a full disk often only shows up here.
  void close() {
    std::FILE* f = f_;
    f_ = nullptr;
    if (std::fclose(f) != 0) fail("write");
  }

 private:
  [[noreturn]] void fail(const char* what) {
    throw Error(path_.string() + ": " + what + " failed: " + std::strerror(errno) + " (disk full?)");
  }
  fs::path path_;
  std::FILE* f_ = nullptr;
};

void check_disk_space(const fs::path& dir, const std::vector<RemoteFile>& todo) {
  uint64_t need = 0;
  for (const auto& f : todo) {
    uint64_t have = regular_file_size(part_path(dir / f.path)).value_or(0);
    need += f.size > have ? f.size - have : 0;
  }
  std::error_code ec;
  fs::space_info space = fs::space(dir, ec);
  if (!ec && space.available < need) {
    throw Error("not enough disk space in " + dir.string() + ": the download needs " + mb(need) +
                ", " + mb(space.available) + " are free");
  }
}

// ---- downloading -----------------------------------------------------------------------------

// Feeds a usable leftover .part into `digest` and returns its size, so the download resumes after
// it. A part longer than the file cannot be a prefix of it and is dropped.
uint64_t reuse_part(const fs::path& part, const RemoteFile& f, Digest& digest, std::ostream& log) {
  auto size = regular_file_size(part);
  if (!size || *size == 0) return 0;
  if (*size > f.size) {
    log << f.path << ": discarding a partial download larger than the file\n";
    remove_quietly(part);
    return 0;
  }
  log << f.path << ": resuming at " << mb(*size) << " of " << mb(f.size) << "\n";
  hub::digest_file(part, digest);
  return *size;
}

enum class Fetch { Done, RangeRefused };

// One GET of `f` into `part`, appending from byte `have`. Returns RangeRefused when the server
// rejects the resume offset (416), leaving the caller to start over.
Fetch fetch_once(const Hub& hub, const RemoteFile& f, const fs::path& part, uint64_t have, Digest& digest,
                 bool progress, std::ostream& log) {
  std::string url = hub.file_url(f.path);
  HttpRequest req = hub.request(url);
  req.range_start = have;
  PartFile file(part, have > 0);
  std::optional<hub::ProgressBar> bar;
  if (progress) bar.emplace(log, f.path, f.size, have);
  uint64_t done = have;
  bool discard = false;  // the bytes on disk are known to be wrong: do not keep them for a resume

  auto on_head = [&](const HttpHead& head) {
    if (have == 0 || (head.status == 206 && head.range_start == have)) return;
    if (head.status == 206) {  // the part on disk is still good; only this answer is unusable
      throw Error("asked to resume at byte " + std::to_string(have) + ", the server answered with other bytes");
    }
    // A 200 to a range request: the server sends the whole file, so start over.
    file.truncate();
    digest = f.start_digest();
    done = 0;
    if (bar) bar->restart();
  };
  auto on_body = [&](const char* data, size_t n) {
    if (done + n > f.size) {
      discard = true;
      throw Error("server sent more than the listed " + std::to_string(f.size) + " bytes");
    }
    file.write(data, n);
    digest.update(data, n);
    done += n;
    if (bar) bar->update(done);
  };

  HttpResult result;
  try {
    result = hub::http_get(req, on_head, on_body);
    file.close();
  } catch (const Error& e) {
    if (bar) bar->abandon();
    if (discard || done == 0) {
      remove_quietly(part);
      throw Error(f.path + ": " + e.what());
    }
    throw Error(f.path + ": " + e.what() + "; " + mb(done) + " kept in " + part.string() +
                ", run pull again to resume");
  }
  if (result.status == 416 && have > 0) return Fetch::RangeRefused;
  if (result.status < 200 || result.status >= 300) {
    if (bar) bar->abandon();
    if (have == 0) remove_quietly(part);
    hub::throw_http_status(result, url);
  }
  if (bar) bar->finish();
  return Fetch::Done;
}

// Moves a complete part into place, or deletes it when its size or checksum is wrong.
void install(const fs::path& part, const fs::path& final_path, const RemoteFile& f, const Digest& digest) {
  uint64_t size = regular_file_size(part).value_or(0);
  if (size < f.size) {
    throw Error(f.path + ": the download ended early at " + std::to_string(size) + " of " +
                std::to_string(f.size) + " bytes; run pull again to resume");
  }
  std::string got = digest.hex();
  if (size != f.size || got != f.digest) {
    remove_quietly(part);
    std::string what = size != f.size
        ? "size mismatch: expected " + std::to_string(f.size) + " bytes, got " + std::to_string(size)
        : std::string(f.algorithm()) + " mismatch: expected " + f.digest + ", got " + got;
    throw Error(f.path + ": " + what + " (the download was deleted; the file on the server does not "
                "match its listing, or the data was corrupted in transit)");
  }
  std::error_code ec;
  fs::rename(part, final_path, ec);
  if (ec) throw Error(final_path.string() + ": cannot move the finished download into place: " + ec.message());
}

void download(const Hub& hub, const RemoteFile& f, const fs::path& dir, bool progress, std::ostream& log) {
  fs::path final_path = dir / f.path;
  fs::path part = part_path(final_path);
  std::error_code ec;
  fs::create_directories(final_path.parent_path(), ec);
  if (ec) throw Error(final_path.parent_path().string() + ": cannot create directory: " + ec.message());

  Digest digest = f.start_digest();
  uint64_t have = reuse_part(part, f, digest, log);
  if (have < f.size || f.size == 0) {
    if (fetch_once(hub, f, part, have, digest, progress, log) == Fetch::RangeRefused) {
      log << f.path << ": the server cannot resume this download; starting over\n";
      remove_quietly(part);
      digest = f.start_digest();
      if (fetch_once(hub, f, part, 0, digest, progress, log) == Fetch::RangeRefused) {
        throw Error(f.path + ": the server refused the download (HTTP 416)");  // unreachable: no range sent
      }
    }
  }
  install(part, final_path, f, digest);
  log << f.path << ": downloaded, " << f.algorithm() << " verified\n";
}

fs::path model_dir(const PullOptions& opts) {
  fs::path dir = opts.dir.empty() ? default_model_dir(opts.repo) : opts.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot create the model directory: " + ec.message());
  return dir;
}

}  // namespace

fs::path default_model_dir(const std::string& repo) {
  check_repo_id(repo);
  fs::path root;
  std::string xdg = env("XDG_CACHE_HOME");
  if (std::string v = env("VOXRT_MODELS"); !v.empty()) {
    root = v;
  } else if (!xdg.empty() && fs::path(xdg).is_absolute()) {  // the XDG spec says to ignore relative values
    root = fs::path(xdg) / "voxrt";
  } else if (std::string home = env("HOME"); !home.empty()) {
    root = fs::path(home) / ".cache" / "voxrt";
  } else {
    throw Error("cannot choose a model directory: none of VOXRT_MODELS, XDG_CACHE_HOME, HOME is set; "
                "pass a directory explicitly");
  }
  std::string name = repo;
  for (size_t pos; (pos = name.find('/')) != std::string::npos;) name.replace(pos, 1, "--");
  return root / name;
}

fs::path pull_model(const PullOptions& opts, std::ostream& log) {
  check_repo_id(opts.repo);
  Hub hub = make_hub(opts);
  // Ask the hub first: with no network this fails before anything is created on disk.
  auto listing = fetch_listing(hub);
  std::vector<RemoteFile> files = select_files(listing, opts, hub);
  fs::path dir = model_dir(opts);
  log << "pulling " << opts.repo << " (" << hub.revision << ") from " << hub.endpoint << " into "
      << dir.string() << "\n";

  std::vector<RemoteFile> todo;
  for (const auto& f : files) {
    fs::path local = dir / f.path;
    if (matches(local, f)) {
      log << f.path << ": already present, " << f.algorithm() << " verified, skipping\n";
      continue;
    }
    if (regular_file_size(local)) log << f.path << ": local copy differs from the hub, downloading it again\n";
    todo.push_back(f);
  }
  check_disk_space(dir, todo);
  for (const auto& f : todo) download(hub, f, dir, opts.progress, log);
  return dir;
}

}  // namespace voxrt
