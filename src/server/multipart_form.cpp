#include "server/multipart_form.h"

#include <algorithm>
#include <cctype>

#include "server/request_error.h"

namespace voxrt::server {
namespace {

constexpr size_t kMaxParts = 128;           // a dozen fields, and up to 100 context_bias phrases (one a field)
constexpr size_t kMaxPartHeaderBytes = 8192;

[[noreturn]] void malformed(const std::string& what) { throw RequestError(400, "malformed multipart body: " + what); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Parameters after a header's first value: `; key=value` or `; key="quoted \"value\""`. Calls
// on_param(key, value) for each; the value unquoted.
template <typename OnParam>
void for_each_param(std::string_view rest, const char* header, OnParam on_param) {
  size_t i = 0;
  while (i < rest.size()) {
    if (rest[i] == ';' || rest[i] == ' ' || rest[i] == '\t') {
      ++i;
      continue;
    }
    const size_t eq = rest.find('=', i);
    if (eq == std::string_view::npos) return;  // a bare token: no value to take
    const std::string_view key = trim(rest.substr(i, eq - i));
    std::string value;
    i = eq + 1;
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
    if (i < rest.size() && rest[i] == '"') {
      ++i;
      bool closed = false;
      while (i < rest.size()) {
        const char c = rest[i++];
        if (c == '\\' && i < rest.size()) {
          value += rest[i++];
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      if (!closed) malformed(std::string(header) + " has an unterminated quoted value");
    } else {
      const size_t end = std::min(rest.find(';', i), rest.size());
      value = std::string(trim(rest.substr(i, end - i)));
      i = end;
    }
    on_param(key, value);
  }
}

void parse_part_headers(std::string_view block, FormPart& part, size_t index) {
  const std::string where = "part " + std::to_string(index + 1);
  bool disposition = false;
  while (!block.empty()) {
    const size_t eol = block.find("\r\n");
    const std::string_view line = block.substr(0, eol);
    block = eol == std::string_view::npos ? std::string_view() : block.substr(eol + 2);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) malformed(where + " has a header line without a colon");
    const std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Disposition")) {
      const size_t semi = value.find(';');
      if (!iequals(trim(value.substr(0, semi)), "form-data"))
        malformed(where + "'s Content-Disposition is not form-data");
      disposition = true;
      if (semi != std::string_view::npos)
        for_each_param(value.substr(semi + 1), "Content-Disposition", [&](std::string_view k, const std::string& v) {
          if (iequals(k, "name")) part.name = v;
          if (iequals(k, "filename")) part.filename = v;
        });
    } else if (iequals(name, "Content-Type")) {
      part.content_type = std::string(value);
    }
  }
  if (!disposition) malformed(where + " has no Content-Disposition header");
  if (part.name.empty()) malformed(where + " has no field name (Content-Disposition's name)");
}

}  // namespace

std::string form_boundary(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  if (!iequals(trim(content_type.substr(0, semi)), "multipart/form-data"))
    throw RequestError(400, "expected a multipart/form-data body, got Content-Type '" +
                                std::string(content_type.substr(0, 100)) + "'");
  std::string boundary;
  if (semi != std::string_view::npos)
    for_each_param(content_type.substr(semi + 1), "Content-Type", [&](std::string_view k, const std::string& v) {
      if (iequals(k, "boundary")) boundary = v;
    });
  if (boundary.empty() || boundary.size() > 70)
    throw RequestError(400, "multipart/form-data Content-Type without a boundary of 1 to 70 characters");
  return boundary;
}

std::vector<FormPart> parse_form(std::string_view content_type, std::string_view body) {
  const std::string delimiter = "--" + form_boundary(content_type);
  const std::string inner = "\r\n" + delimiter;  // how every delimiter after the first begins
  size_t at;
  if (body.substr(0, delimiter.size()) == delimiter) {
    at = delimiter.size();
  } else {  // a preamble before the first delimiter
    const size_t first = body.find(inner);
    if (first == std::string_view::npos) malformed("the boundary never appears in the body");
    at = first + inner.size();
  }
  std::vector<FormPart> parts;
  for (;;) {
    // After a delimiter: "--" ends the body; otherwise optional padding and a line break.
    if (body.substr(at, 2) == "--") return parts;
    while (at < body.size() && (body[at] == ' ' || body[at] == '\t')) ++at;
    if (body.substr(at, 2) != "\r\n") malformed("no line break after the boundary of part " + std::to_string(parts.size() + 1) +
                                                (at >= body.size() ? " (the body ends there)" : ""));
    at += 2;
    if (parts.size() == kMaxParts) malformed("more than " + std::to_string(kMaxParts) + " parts");
    FormPart part;
    // Headers end at an empty line; a part with no headers starts with it.
    size_t headers_end;
    if (body.substr(at, 2) == "\r\n") {
      headers_end = at;
    } else {
      headers_end = body.find("\r\n\r\n", at);
      if (headers_end == std::string_view::npos || headers_end - at > kMaxPartHeaderBytes)
        malformed("the headers of part " + std::to_string(parts.size() + 1) +
                  (headers_end == std::string_view::npos ? " never end" : " are longer than 8 KB"));
      headers_end += 2;
    }
    parse_part_headers(body.substr(at, headers_end - at), part, parts.size());
    at = headers_end + 2;
    const size_t end = body.find(inner, at);
    if (end == std::string_view::npos)
      malformed("part " + std::to_string(parts.size() + 1) + " ('" + part.name + "') is cut off: no boundary after it");
    part.data = body.substr(at, end - at);
    parts.push_back(std::move(part));
    at = end + inner.size();
  }
}

}  // namespace voxrt::server
