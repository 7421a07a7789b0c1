// Safetensors reader and writer. Layout: u64 little-endian header length N, N bytes of JSON, then the
// data section; every tensor's data_offsets are relative to the start of the data section. The file
// is trusted for nothing: each field is checked before a pointer into the mapping is handed out.
#include "safetensors/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "common/bf16.h"
#include "common/error.h"
#include "common/thread_team.h"

namespace voxrt {
namespace {

using nlohmann::json;

// Headers of real checkpoints are ~100 KB; anything near this limit is garbage or an attack.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A header nests three levels: the top object, an entry's object, its shape and data_offsets arrays.
// Nesting is refused well before it costs: the messages below print a shape with nlohmann's dump(),
// which recurses once a level (a 20 KB header of [[[...]]] overflowed the stack), and every level
// costs ~100 bytes parsed (a 100 MB header of them: gigabytes).
constexpr int kMaxHeaderDepth = 16;

// Linux's default fault_around_bytes (a power of two, a multiple of the page size).
constexpr size_t kFaultAroundBytes = 64 * 1024;

struct DTypeEntry {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2}, {DType::F64, "F64", 8},
    {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I16, "I16", 2},   {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1}, {DType::F8_E4M3, "F8_E4M3", 1},
};

const DTypeEntry& dtype_entry(DType dtype) {
  for (const auto& e : kDTypes)
    if (e.dtype == dtype) return e;
  throw Error("invalid DType value " + std::to_string(static_cast<int>(dtype)));
}

const DTypeEntry* dtype_by_name(const std::string& name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return &e;
  return nullptr;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses the header, rejecting duplicate top-level keys (nlohmann would silently keep the last) and
// nesting deeper than kMaxHeaderDepth.
json parse_header(const std::string& where, const char* begin, const char* end) {
  std::set<std::string> seen;
  std::string duplicate;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    // depth counts the containers around the one starting: 0 for the header's own object.
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxHeaderDepth)
      throw Error(where + ": header nests deeper than " + std::to_string(kMaxHeaderDepth) +
                  " levels (a safetensors header has 3)");
    return true;
  };
  json header;
  try {
    header = json::parse(begin, end, on_event);
  } catch (const json::exception& e) {
    throw Error(where + ": header is not valid JSON: " + e.what());
  }
  check(header.is_object(), where,
        std::string("header is not a JSON object (got ") + header.type_name() + ")");
  check(duplicate.empty(), where, "tensor '" + duplicate + "' appears twice in the header");
  return header;
}

// A JSON value that must be a non-negative integer fitting in int64.
bool as_nonneg_int(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = v.get<int64_t>();
    return true;
  }
  return false;
}

std::map<std::string, std::string> parse_metadata(const std::string& where, const json& meta) {
  check(meta.is_object(), where, "__metadata__ is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : meta.items()) {
    check(value.is_string(), where, "__metadata__ entry '" + key + "' is not a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

// Validates one header entry against the data section; returns it with data pointing into the map.
TensorInfo parse_entry(const std::string& where, const std::string& name, const json& entry,
                       const uint8_t* data, uint64_t data_size, uint64_t* begin_out) {
  const std::string tensor = "tensor '" + name + "'";
  check(entry.is_object(), where, tensor + ": entry is not a JSON object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    check(entry.contains(field), where, tensor + ": missing field " + field);

  const json& jdtype = entry.at("dtype");
  check(jdtype.is_string(), where, tensor + ": dtype is not a string");
  const DTypeEntry* dt = dtype_by_name(jdtype.get<std::string>());
  check(dt != nullptr, where, tensor + ": unknown dtype '" + jdtype.get<std::string>() + "'");

  TensorInfo info;
  info.name = name;
  info.dtype = dt->dtype;
  const json& jshape = entry.at("shape");
  check(jshape.is_array(), where, tensor + ": shape is not an array");
  uint64_t nbytes = dt->size;
  for (const json& d : jshape) {
    int64_t dim = 0;
    check(as_nonneg_int(d, &dim), where,
          tensor + ": shape " + jshape.dump() + " has an entry that is not a non-negative integer");
    info.shape.push_back(dim);
    check(!__builtin_mul_overflow(nbytes, static_cast<uint64_t>(dim), &nbytes), where,
          tensor + ": shape " + jshape.dump() + " x " + dt->name + " overflows 64 bits");
  }

  const json& joff = entry.at("data_offsets");
  int64_t begin = 0, end = 0;
  check(joff.is_array() && joff.size() == 2 && as_nonneg_int(joff[0], &begin) && as_nonneg_int(joff[1], &end),
        where, tensor + ": data_offsets " + joff.dump() + " is not a pair of non-negative integers");
  const std::string offsets = "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  check(begin <= end, where, tensor + ": " + offsets + " has begin > end");
  check(static_cast<uint64_t>(end) <= data_size, where,
        tensor + ": " + offsets + " run past the end of the data section (" + std::to_string(data_size) +
            " bytes; truncated file?)");
  check(static_cast<uint64_t>(end - begin) == nbytes, where,
        tensor + ": " + offsets + " do not match shape " + shape_str(info.shape) + " x " + dt->name + " (" +
            std::to_string(nbytes) + " bytes)");

  info.data = data + begin;
  info.nbytes = static_cast<size_t>(nbytes);
  *begin_out = static_cast<uint64_t>(begin);
  return info;
}

// Two tensors sharing bytes would alias each other's weights; the format forbids it.
void check_no_overlap(const std::string& where, const std::vector<TensorInfo>& tensors,
                      const std::vector<uint64_t>& begins) {
  std::vector<size_t> order;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].nbytes > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return begins[a] < begins[b]; });
  for (size_t k = 1; k < order.size(); ++k) {
    size_t prev = order[k - 1], cur = order[k];
    check(begins[prev] + tensors[prev].nbytes <= begins[cur], where,
          "tensors '" + tensors[prev].name + "' and '" + tensors[cur].name + "' overlap (bytes " +
              std::to_string(begins[cur]) + ".." + std::to_string(begins[prev] + tensors[prev].nbytes) +
              " of the data section)");
  }
}

}  // namespace

size_t dtype_size(DType dtype) { return dtype_entry(dtype).size; }
const char* dtype_name(DType dtype) { return dtype_entry(dtype).name; }

int64_t TensorInfo::numel() const {
  // An empty tensor may list huge other dimensions; any other product is bounded by the file size.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string where = path.string();
  // Owned from the start so that the destructor unmaps on any validation error below.
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  check(fd >= 0, where, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(where + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw Error(where + ": file is " + std::to_string(size) +
                " bytes, too short for a safetensors header (truncated file?)");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  check(map != MAP_FAILED, where, std::string("cannot map: ") + std::strerror(map_errno));
  file->map_ = map;
  file->map_size_ = size;

  const auto* bytes = static_cast<const uint8_t*>(map);
  const uint64_t header_len = read_u64_le(bytes);
  check(header_len <= size - 8, where,
        "header length " + std::to_string(header_len) + " exceeds file size " + std::to_string(size) +
            " (truncated file?)");
  check(header_len < kMaxHeaderBytes, where,
        "header length " + std::to_string(header_len) + " exceeds the limit of " +
            std::to_string(kMaxHeaderBytes) + " bytes");

  const char* hbegin = reinterpret_cast<const char*>(bytes + 8);
  json header = parse_header(where, hbegin, hbegin + header_len);
  const uint8_t* data = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  std::vector<uint64_t> begins;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      file->metadata_ = parse_metadata(where, entry);
      continue;
    }
    uint64_t begin = 0;
    file->tensors_.push_back(parse_entry(where, name, entry, data, data_size, &begin));
    begins.push_back(begin);
    check(file->index_.emplace(name, file->tensors_.size() - 1).second, where,
          "tensor '" + name + "' appears twice in the header");
  }
  check_no_overlap(where, file->tensors_, begins);
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) munmap(map_, map_size_);
}

void SafetensorsFile::release(const uint8_t* data, size_t nbytes) const {
  const auto* base = static_cast<const uint8_t*>(map_);
  check(data >= base && nbytes <= map_size_ && static_cast<size_t>(data - base) <= map_size_ - nbytes, path_.string(),
        "release: range outside the mapping");
  if (nbytes == 0) return;
  // Whole fault-around windows covering the range. A read fault maps the cached pages of its whole
  // window (the kernel's fault_around_bytes, 64 KiB by default, aligned in the address space, not in
  // the file: mmap only page-aligns the mapping), so copying the next tensor maps again the released
  // pages that share its first window: dropping whole windows each time leaves nothing of the copied
  // tensors behind.
  const uintptr_t window = std::max<uintptr_t>(kFaultAroundBytes, static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)));
  const auto map_begin = reinterpret_cast<uintptr_t>(base), map_end = map_begin + map_size_;
  const auto first = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = std::max(map_begin, first / window * window);
  const uintptr_t end = std::min(map_end, (first + nbytes + window - 1) / window * window);
  // The mapping is private and read-only, so no page was ever written: dropping one loses nothing.
  // Advice only: should the kernel refuse, the pages merely stay resident until the file closes.
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// The loops below use no branches (selects are written as bit masks: GCC does not if-convert the
// ternary form) and read through memcpy (tensor data may be unaligned), so that GCC and Clang
// vectorise them; they convert ~9 GB of weights at model load.
namespace {

// The conversions run on all cores for large tensors: loading a 4 B-parameter checkpoint is
// mostly this loop and the page faults of the mapped file it touches.
void bf16_to_f32(const uint8_t* src, float* dst, size_t n) {
  ThreadTeam::shared().parallel_for(n, size_t{1} << 20, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = bf16_to_float(h);
    }
  });
}

// Exact IEEE half -> float. Subnormals go through an integer-to-float conversion instead of a
// denormal multiply, so the result does not depend on FTZ/DAZ settings.
void f16_to_f32_serial(const uint8_t* src, float* dst, size_t i0, size_t i1) {
  for (size_t i = i0; i < i1; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7fffu;  // exponent and mantissa
    const uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    const uint32_t inf_nan = (em << 13) | 0x7f800000u;
    const uint32_t subnormal = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
    const uint32_t is_subnormal = 0u - static_cast<uint32_t>(em < 0x0400u);   // exponent 0
    const uint32_t is_inf_nan = 0u - static_cast<uint32_t>(em >= 0x7c00u);    // exponent 31
    uint32_t bits = (subnormal & is_subnormal) | (normal & ~is_subnormal);
    bits = (inf_nan & is_inf_nan) | (bits & ~is_inf_nan);
    dst[i] = std::bit_cast<float>(bits | sign);
  }
}

void f16_to_f32(const uint8_t* src, float* dst, size_t n) {
  ThreadTeam::shared().parallel_for(n, size_t{1} << 20, [&](size_t i0, size_t i1) { f16_to_f32_serial(src, dst, i0, i1); });
}

}  // namespace

void convert_to_f32(DType dtype, const uint8_t* src, float* dst, size_t n) {
  switch (dtype) {
    case DType::BF16: bf16_to_f32(src, dst, n); return;
    case DType::F16: f16_to_f32(src, dst, n); return;
    case DType::F32:
      // An empty tensor's pointers may be null (an empty vector's data()): memcpy must not see them.
      if (n > 0) std::memcpy(dst, src, n * sizeof(float));
      return;
    default: throw Error(std::string("convert_to_f32: cannot convert dtype ") + dtype_name(dtype) + " to F32");
  }
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string where = path.string();
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    check(t.name != "__metadata__" && !header.contains(t.name), where,
          "tensor name '" + t.name + "' is reserved or used twice");
    uint64_t expected = dtype_size(t.dtype);
    for (int64_t d : t.shape) {
      check(d >= 0, where, "tensor '" + t.name + "': negative dimension in shape " + shape_str(t.shape));
      expected *= static_cast<uint64_t>(d);
    }
    check(expected == t.bytes.size(), where,
          "tensor '" + t.name + "': " + std::to_string(t.bytes.size()) + " bytes given, shape " +
              shape_str(t.shape) + " x " + dtype_name(t.dtype) + " needs " + std::to_string(expected));
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  check(static_cast<bool>(out), where, "cannot create file");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  out.close();
  check(static_cast<bool>(out), where, "write failed");
}

}  // namespace voxrt
