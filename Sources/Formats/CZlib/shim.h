// zlib, for reading gzip-compressed traces (.jsonl.gz).
#include <zlib.h>
