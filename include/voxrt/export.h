// VOXRT_API marks what libvoxrt.so exports: the public classes. The library is built with hidden
// symbols otherwise, so its internals (src/) cannot clash with, or be relied on by, a program using it.
#pragma once

#define VOXRT_API __attribute__((visibility("default")))
