// The process's peak resident memory (the high-water mark of its resident set, VmHWM in
// /proc/self/status), for reporting what a run really used. Returns 0 where it is not known.
// reset_peak_resident() starts the mark again from the current resident set (Linux: "5" into
// /proc/self/clear_refs), so that a peak measured after set-up excludes buffers set-up touched
// and gave back; returns false where that is not possible.
#pragma once

#include <cstddef>

namespace gossamer {

size_t peak_resident_bytes();
bool reset_peak_resident();

}  // namespace gossamer
