#!/usr/bin/env python3
"""Compares a merged sharded-replay record with a single-process replay's.

Usage: compare_shard_records.py MERGED SINGLE START_AT SHARD_REPORT.json...

Each record's replay_start events name every controller's number in the plan
and its socket's endpoint; with them, both records are read as: per controller
number, the payloads it sent in order; and the impairment events, by the
message number (`index`) they decided. Those must be equal. The shards'
reports must each have started on START_AT. Prints one summary line; exits 1
with the first difference otherwise.
"""
import json
import os
import sys
from datetime import datetime, timezone


def read(path):
    with open(path) as f:
        header = json.loads(f.readline())
        records = [json.loads(line) for line in f if line.strip()]
    return header, records


def content(path):
    header, records = read(path)
    numbers = {}
    starts = 0
    for r in records:
        if r.get("kind") == "event" and r.get("event") == "replay_start":
            starts += 1
            d = r["data"]
            endpoints, controllers = d["controller_endpoints"], d["controller_numbers"]
            if len(endpoints) != len(controllers):
                sys.exit(f"{path}: replay_start lists {len(endpoints)} endpoints for {len(controllers)} controllers")
            for endpoint, number in zip(endpoints, controllers):
                if endpoint in numbers:
                    sys.exit(f"{path}: endpoint {endpoint} named twice")
                numbers[endpoint] = number
    if starts == 0:
        sys.exit(f"{path}: no replay_start event")
    sent, impaired, acks = {}, {}, 0
    for r in records:
        if r.get("kind") == "msg" and r["dir"] == "c2h":
            sent.setdefault(numbers[r["src"]], []).append(r["payload"])
        elif r.get("kind") == "msg":
            acks += 1
        elif r.get("kind") == "event" and r["event"] == "impair":
            d = dict(r["data"])
            d["controller"] = numbers[d["controller"]]
            impaired[d["index"]] = (r["event"], d)
    return header, starts, sent, impaired, acks


def main():
    merged_path, single_path, start_at, reports = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    header, starts, sent, impaired, acks = content(merged_path)
    _, _, single_sent, single_impaired, single_acks = content(single_path)
    shards = header.get("shards", [])
    if len(shards) != len(reports) or starts != len(reports):
        sys.exit(f"{merged_path}: {len(shards)} shard headers and {starts} replay_start events for {len(reports)} shards")
    if sorted(sent) != sorted(single_sent):
        sys.exit(f"controllers differ: merged {sorted(sent)}, single {sorted(single_sent)}")
    for number in sorted(single_sent):
        if sent[number] != single_sent[number]:
            a, b = sent[number], single_sent[number]
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            sys.exit(f"controller {number}: {len(a)} sends merged, {len(b)} single; first difference at send {first}")
    if impaired != single_impaired:
        diff = sorted(k for k in set(impaired) | set(single_impaired) if impaired.get(k) != single_impaired.get(k))
        sys.exit(f"impairment decisions differ for {len(diff)} message(s), first index {diff[0]}: "
                 f"merged {impaired.get(diff[0])}, single {single_impaired.get(diff[0])}")
    # Every shard started on the agreed instant.
    instant = datetime.strptime(start_at[:26] + "Z", "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    start_ns = int(instant.timestamp()) * 10**9 + int(start_at[20:29])
    lateness = []
    for path in reports:
        with open(path) as f:
            report = json.load(f)
        lateness.append(report.get("lateness_us", {}).get("p99"))
        if report["outcome"] != "completed":
            sys.exit(f"{path}: outcome {report['outcome']}: {report.get('detail')}")
        if report["anchor_wall_ns"] != start_ns:
            sys.exit(f"{path}: started at {report['anchor_wall_ns']}, not the agreed {start_ns}")
    sends = sum(len(v) for v in sent.values())
    if sends == 0:
        sys.exit("nothing was sent: nothing compared")
    single_p99 = None
    single_report = single_path[:-len(".jsonl")] + ".json" if single_path.endswith(".jsonl") else None
    if single_report and os.path.exists(single_report):  # the single replay's report, beside its record, when there is one
        with open(single_report) as f:
            single_p99 = json.load(f).get("lateness_us", {}).get("p99")
    print(f"identical: {len(sent)} controllers, {sends} sends, {len(impaired)} impairment decisions; "
          f"acks {acks} merged, {single_acks} single; {len(reports)} shards started at {start_at}")
    print("send lateness p99, µs: shards " + ", ".join(f"{p:.0f}" if p is not None else "-" for p in lateness)
          + (f"; one process {single_p99:.0f}" if single_p99 is not None else ""))


main()
