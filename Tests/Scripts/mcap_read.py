#!/usr/bin/env python3
"""Reads a kinetrace MCAP trace with the `mcap` package and decodes every
message with `mcap_ros1` (no kinetrace code), as an independent reader.

    mcap_read.py FILE

Prints one JSON object: the profile, the header metadata, each channel's
topic, schema name and encodings, and per topic the message count, the
first and last log times, and the first decoded message's fields. CRCs are
validated. Exits 1 with one line on anything it cannot read."""
import json
import sys

from mcap.reader import make_reader
from mcap_ros1.decoder import DecoderFactory


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main(path):
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()], validate_crcs=True)
        header = reader.get_header()
        summary = reader.get_summary()
        metadata = {m.name: m.metadata for m in reader.iter_metadata()}
        topics = {}
        for schema, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            entry = topics.setdefault(channel.topic, {"count": 0, "first_log_time": message.log_time})
            entry["count"] += 1
            entry["last_log_time"] = message.log_time
            if "first" not in entry:
                entry["first"] = {slot: plain(getattr(decoded, slot)) for slot in decoded.__slots__}
        channels = [{"topic": c.topic, "message_encoding": c.message_encoding, "metadata": c.metadata,
                     "schema": summary.schemas[c.schema_id].name, "schema_encoding": summary.schemas[c.schema_id].encoding}
                    for c in summary.channels.values()]
        print(json.dumps({"profile": header.profile, "metadata": metadata, "channels": channels,
                          "message_count": summary.statistics.message_count, "chunk_count": summary.statistics.chunk_count,
                          "topics": topics}))


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as error:  # one line, whatever went wrong
        print(f"mcap_read.py: {sys.argv[1]}: {type(error).__name__}: {error}".replace("\n", " "), file=sys.stderr)
        sys.exit(1)
