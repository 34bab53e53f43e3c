#!/usr/bin/env python3
"""Send-time accuracy of replay tools, from an independent loopback capture.

Reads the manifest written by run.sh (one line per tool run), and for each run:
  * the schedule: the input pcap both tools sent (timestamps and payloads);
  * the observation: the tcpdump capture of that run (nanosecond pcap);
matches every observed MotionFrame to its schedule entry by payload bytes
(FIFO per payload, so repeated payloads still match in order), and computes

    lateness_i = obs_i - (anchor + offset_i),  offset_i = t_i - t_0,
    anchor     = min_i (obs_i - offset_i)

i.e. the run is aligned so that the packet sent earliest relative to its
schedule counts as exactly on time; every other packet is late by >= 0.
This removes the unknowable start-up delay of each tool (when it picks its
anchor) without letting either tool look better than its best packet.

Writes a JSON file with all figures and a Markdown table. Python stdlib only.
Exit status: 0 on success (targets missed are reported, not failures),
2 on a harness error (unreadable manifest or pcap).
"""

import argparse
import collections
import datetime
import json
import math
import os
import struct
import sys

PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
FRAME_LEN = 36  # specs/motionlink-v1.md: a MotionFrame is exactly 36 bytes.

TARGET_P99_US = 100.0
TARGET_RATIO = 0.1


class HarnessError(Exception):
    pass


def read_pcap(path):
    """Yield (timestamp_ns, frame_bytes) from a classic pcap (µs or ns)."""
    with open(path, "rb") as f:
        header = f.read(24)
        if len(header) < 24:
            raise HarnessError(f"{path}: not a pcap (file too short)")
        for endian in ("<", ">"):
            magic = struct.unpack(endian + "I", header[:4])[0]
            if magic in (PCAP_MAGIC_NS, PCAP_MAGIC_US):
                break
        else:
            raise HarnessError(f"{path}: not a classic pcap (magic {header[:4].hex()})")
        scale = 1 if magic == PCAP_MAGIC_NS else 1000
        _, _, _, _, _, linktype = struct.unpack(endian + "HHiIII", header[4:])
        if linktype & 0x0FFFFFFF != LINKTYPE_ETHERNET:
            raise HarnessError(f"{path}: link type {linktype}, expected Ethernet (1)")
        record = struct.Struct(endian + "IIII")
        while True:
            rh = f.read(16)
            if not rh:
                return
            if len(rh) < 16:
                raise HarnessError(f"{path}: truncated record header")
            sec, frac, caplen, _ = record.unpack(rh)
            data = f.read(caplen)
            if len(data) < caplen:
                raise HarnessError(f"{path}: truncated record")
            yield sec * 1_000_000_000 + frac * scale, data, scale


def udp_payload(frame):
    """(dst_port, payload) of an Ethernet/IPv4/UDP frame, else None."""
    if len(frame) < 14 + 20 + 8:
        return None
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype != 0x0800:
        return None
    ihl = (frame[14] & 0x0F) * 4
    proto = frame[14 + 9]
    flags_frag = struct.unpack_from("!H", frame, 14 + 6)[0]
    if proto != 17 or flags_frag & 0x3FFF:  # not UDP, or a fragment
        return None
    u = 14 + ihl
    if len(frame) < u + 8:
        return None
    _, dport, ulen, _ = struct.unpack_from("!HHHH", frame, u)
    payload = frame[u + 8 : u + ulen]
    if len(payload) != ulen - 8:
        return None  # snapped short
    return dport, payload


def frames(path, port=None):
    """(timestamp_ns, payload) of every 36-byte UDP payload, optionally to one port."""
    out, microsecond = [], False
    for ts, data, scale in read_pcap(path):
        microsecond = microsecond or scale != 1
        parsed = udp_payload(data)
        if parsed is None:
            continue
        dport, payload = parsed
        if len(payload) != FRAME_LEN or (port is not None and dport != port):
            continue
        out.append((ts, payload))
    return out, microsecond


def percentile(sorted_values, p):
    """Nearest-rank percentile (the smallest value with >= p % at or below it)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def analyze_run(schedule, capture_path, port, declared_anchor_ns=None):
    observed, microsecond = frames(capture_path, port)
    observed.sort(key=lambda x: x[0])
    t0 = schedule[0][0]
    queues = collections.defaultdict(collections.deque)
    for i, (_, payload) in enumerate(schedule):
        queues[payload].append(i)
    pairs, unmatched = [], 0
    for ts, payload in observed:
        q = queues.get(payload)
        if q:
            i = q.popleft()
            pairs.append((ts, schedule[i][0] - t0))
        else:
            unmatched += 1
    result = {
        "scheduled": len(schedule),
        "captured": len(observed),
        "matched": len(pairs),
        "missing": len(schedule) - len(pairs),
        "unmatched_captured": unmatched,
        "capture_microsecond_only": microsecond,
    }
    if not pairs:
        return result
    anchor = min(ts - off for ts, off in pairs)
    late_us = sorted((ts - off - anchor) / 1000.0 for ts, off in pairs)
    # Secondary: error of each inter-send interval against the scheduled one,
    # in schedule order. Insensitive to drift that accumulates slowly, so it
    # separates jitter from drift (tcpreplay 4.4 sleeps by deltas and drifts).
    by_offset = sorted(pairs, key=lambda x: x[1])
    gaps_us = sorted(
        abs((b[0] - a[0]) - (b[1] - a[1])) / 1000.0 for a, b in zip(by_offset, by_offset[1:])
    )
    if declared_anchor_ns is not None:
        # The replayer's own anchor (CLOCK_REALTIME, as the capture's stamps are):
        # |send - schedule| with nothing aligned away, kernel send path included.
        own = sorted(abs(ts - off - declared_anchor_ns) / 1000.0 for ts, off in pairs)
        result["lateness_vs_own_anchor_us"] = {
            "p50": percentile(own, 50), "p99": percentile(own, 99), "max": own[-1],
        }
    result.update({
        "lateness_us": {
            "p50": percentile(late_us, 50),
            "p99": percentile(late_us, 99),
            "p99_9": percentile(late_us, 99.9),
            "max": late_us[-1],
            "mean": sum(late_us) / len(late_us),
        },
        "interval_error_us": {
            "p50": percentile(gaps_us, 50),
            "p99": percentile(gaps_us, 99),
            "max": gaps_us[-1] if gaps_us else None,
        },
        # Observed span over scheduled span: > 1 means the tool ran slow (drift).
        "span_ratio": (
            (max(ts for ts, _ in pairs) - min(ts for ts, _ in pairs)) / by_offset[-1][1]
            if by_offset[-1][1] > 0 else None
        ),
    })
    return result


def parse_tcpdump_stats(path):
    stats = {}
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return stats
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].isdigit():
            rest = " ".join(words[1:])
            key = {
                "packets captured": "captured",
                "packets received by filter": "received_by_filter",
                "packets dropped by kernel": "dropped_by_kernel",
                "packets dropped by interface": "dropped_by_interface",
            }.get(rest)
            if key:
                stats[key] = int(words[0])
    return stats


def self_report(path):
    """The replayer's own lateness figures (its clock), in µs, when present."""
    try:
        report = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(report.get("lateness"), dict):  # nanosecond keys
        lat = report["lateness"]
        return {k[:-3]: lat[k] / 1000.0 for k in ("p50_ns", "p99_ns", "max_ns") if k in lat}
    if isinstance(report.get("lateness_us"), dict):
        lat = report["lateness_us"]
        return {k: lat[k] for k in ("p50", "p99", "max") if k in lat}
    return None


def fmt(v, digits=1):
    return "—" if v is None else f"{v:,.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", required=True, help="runs, tab-separated, from run.sh")
    ap.add_argument("--meta", required=True, help="KEY=VALUE lines about the environment")
    ap.add_argument("--json", required=True, help="results JSON to write")
    ap.add_argument("--markdown", required=True, help="results Markdown to write")
    args = ap.parse_args()

    meta = {}
    for line in open(args.meta, encoding="utf-8"):
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            meta[k] = v

    loads = collections.OrderedDict()
    schedules = {}
    for line in open(args.manifest, encoding="utf-8"):
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("\t")
        cpu = fields.pop() if len(fields) == 14 else ""
        (load, controllers, rate, duration, tool, status, input_pcap, capture,
         capture_log, port, exit_code, report, command) = fields
        entry = loads.setdefault(load, {
            "load": load, "controllers": int(controllers), "rate_hz": float(rate),
            "duration_s": float(duration), "input": os.path.basename(input_pcap), "tools": {},
        })
        run = {"status": status, "command": command, "cpu_s": float(cpu) if cpu else None}
        if status == "ran":
            if input_pcap not in schedules:
                sched, micro = frames(input_pcap)
                if not sched:
                    raise HarnessError(f"{input_pcap}: no MotionFrames to schedule")
                if micro:
                    raise HarnessError(f"{input_pcap}: microsecond pcap; the schedule needs nanoseconds")
                schedules[input_pcap] = sched
            run["exit_code"] = int(exit_code)
            anchor = None
            if report:
                try:
                    anchor = json.load(open(report, encoding="utf-8")).get("anchor_wall_ns")
                except (OSError, ValueError):
                    anchor = None
            run.update(analyze_run(schedules[input_pcap], capture, int(port), anchor))
            run["capture_stats"] = parse_tcpdump_stats(capture_log)
            if report:
                run["self_reported_lateness_us"] = self_report(report)
        entry["tools"][tool] = run

    for entry in loads.values():
        ours = entry["tools"].get("kinetrace", {}).get("lateness_us", {}).get("p99")
        # The baseline is tcpreplay's best run (lowest p99) among its timers.
        candidates = [
            (run["lateness_us"]["p99"], tool) for tool, run in entry["tools"].items()
            if tool.startswith("tcpreplay") and run.get("lateness_us")
        ]
        theirs, baseline = min(candidates) if candidates else (None, None)
        ratio = ours / theirs if ours is not None and theirs else None
        entry["tcpreplay_baseline"] = baseline
        entry["tcpreplay_baseline_p99_us"] = theirs
        entry["ratio_p99_kinetrace_over_tcpreplay"] = ratio
        entry["target_p99_le_100us"] = None if ours is None else ours <= TARGET_P99_US
        entry["target_ratio_le_0_1"] = None if ratio is None else ratio <= TARGET_RATIO

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = {
        "generated": now,
        "environment": meta,
        "targets": {"p99_abs_lateness_us_max": TARGET_P99_US, "p99_ratio_to_tcpreplay_max": TARGET_RATIO},
        "method": (
            "Both tools send the same c2h-only nanosecond pcap over loopback; tcpdump captures each run "
            "separately on lo at nanosecond precision. Observed frames are matched to the input by payload "
            "(FIFO for repeats); lateness = obs - (anchor + t_i - t_0) with anchor = min(obs - offset), so "
            "the earliest-relative packet is on time and |lateness| = lateness. Percentiles are nearest-rank. "
            "The ratio target compares with tcpreplay's best timer in the same run. interval_error_us is "
            "|observed gap - scheduled gap| between consecutive frames (jitter without drift); span_ratio is "
            "observed span / scheduled span."
        ),
        "loads": list(loads.values()),
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    yes_no = {True: "pass", False: "**fail**", None: "—"}
    lines = [
        f"Replay send-time accuracy, {now}, {meta.get('cpus', '?')} CPUs, kernel {meta.get('kernel', '?')}; "
        f"{meta.get('tcpreplay_version', 'tcpreplay ?')} (`{meta.get('tcpreplay_options', '')}`); "
        f"kinetrace replay options `{meta.get('kinetrace_options', '')}`.",
        "|lateness| in µs against the input schedule, timestamped by tcpdump on lo (ns); "
        "self = the replayer's own p99 on its clock; own-anchor p99 = |capture stamp − (the replayer's declared "
        "anchor + offset)|, nothing aligned away.",
        "",
        "| Load | Tool | matched / scheduled | p50 | p99 | p99.9 | max | self p99 | own-anchor p99 | gap err p99 | span ratio | capture drops | CPU s | p99 ≤ 100 µs | p99 ≤ 0.1 × best tcpreplay |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for entry in loads.values():
        for tool, run in entry["tools"].items():
            label = f"{entry['rate_hz']:,.0f} Hz × {entry['controllers']:,} ({entry['duration_s']:g} s)"
            if run["status"] != "ran":
                lines.append(f"| {label} | {tool} | {run['status']} | | | | | | | | | | | | |")
                continue
            lat = run.get("lateness_us", {})
            selfp99 = (run.get("self_reported_lateness_us") or {}).get("p99")
            stats = run.get("capture_stats", {})
            drops = stats.get("dropped_by_kernel", 0) + stats.get("dropped_by_interface", 0)
            matched = f"{run['matched']:,} / {run['scheduled']:,}"
            if run["unmatched_captured"]:
                matched += f" (+{run['unmatched_captured']} unmatched)"
            if run["exit_code"]:
                matched += f" (exit {run['exit_code']})"
            abs_ok = ratio_ok = ""
            if tool == "kinetrace":
                abs_ok = yes_no[entry["target_p99_le_100us"]]
                ratio = entry["ratio_p99_kinetrace_over_tcpreplay"]
                ratio_ok = f"{yes_no[entry['target_ratio_le_0_1']]} ({fmt(ratio, 4)} vs {entry['tcpreplay_baseline']})"
            lines.append(
                f"| {label} | {tool} | {matched} | {fmt(lat.get('p50'))} | {fmt(lat.get('p99'))} | "
                f"{fmt(lat.get('p99_9'))} | {fmt(lat.get('max'))} | {fmt(selfp99)} | "
                f"{fmt((run.get('lateness_vs_own_anchor_us') or {}).get('p99'))} | "
                f"{fmt(run.get('interval_error_us', {}).get('p99'))} | {fmt(run.get('span_ratio'), 5)} | "
                f"{drops} | {fmt(run.get('cpu_s'), 2)} | {abs_ok} | {ratio_ok} |"
            )
    # The highest frame rate (controllers × rate) at which each tool's p99 stayed ≤ 100 µs.
    best = {}
    for entry in loads.values():
        frames_per_s = entry["controllers"] * entry["rate_hz"]
        for tool, run in entry["tools"].items():
            p99 = (run.get("lateness_us") or {}).get("p99")
            complete = run.get("status") == "ran" and run.get("matched") == run.get("scheduled") and not run.get("exit_code")
            if p99 is not None and p99 <= TARGET_P99_US and complete:
                best[tool] = max(best.get(tool, 0), frames_per_s)
    result["highest_rate_p99_le_100us"] = best
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    lines.append("")
    lines.append("Highest load with every frame sent and p99 ≤ 100 µs: " + (", ".join(
        f"{tool} {rate:,.0f} frames/s" for tool, rate in sorted(best.items())) or "none") + ".")
    with open(args.markdown, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except (HarnessError, OSError, ValueError) as e:
        print(f"analyze.py: {e}", file=sys.stderr)
        sys.exit(2)
