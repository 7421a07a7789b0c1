// multipart/form-data request bodies (RFC 7578), as OpenAI's file endpoints take them: each part's
// field name, file name and content type from its Content-Disposition and Content-Type headers,
// and its bytes, which stay in the body (views, no copy of an upload). Written for hostile input:
// every malformed body (no boundary, a part cut off, headers without an end, a missing closing
// delimiter) is a RequestError 400 saying what is wrong, and the parser never reads past the body.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace voxrt::server {

struct FormPart {
  std::string name;          // Content-Disposition's name
  std::string filename;      // its filename, when the part is a file (empty otherwise)
  std::string content_type;  // the part's Content-Type, or empty
  std::string_view data;     // the part's bytes, a view into the body
};

// The boundary of a "multipart/form-data; boundary=..." Content-Type (quoted or not); throws
// RequestError 400 when the type is another one or the boundary is missing or too long (RFC 2046:
// 1 to 70 characters).
std::string form_boundary(std::string_view content_type);

// The parts of `body`, in order. Throws RequestError 400 naming what is malformed.
std::vector<FormPart> parse_form(std::string_view content_type, std::string_view body);

}  // namespace voxrt::server
