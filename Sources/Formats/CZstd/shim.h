// Zstandard, for the optional compression of MCAP traces' chunks (.mcap).
#include <zstd.h>
