#!/usr/bin/env bash
# KeepCalm JSON decode rate without the Benchmarks package (which takes long to
# build): compiles the wire layer and KinetraceJSON with -O as one module with
# a small driver, then decodes a million messages whose members come in six
# orders, on one core. Prints messages/s, and, as the anchor measured in the
# same run, Foundation's JSONSerialization parsing the same messages and
# reading x, y and z (what a host written with Foundation would do), with
# the ratio. Usage: Benchmarks/keepcalm/decode-rate.sh [messages]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/main.swift" <<'SWIFT'
#if canImport(Glibc)
import Glibc
#endif
import Foundation
let total = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 1_000_000
var messages: [[UInt8]] = []
var state: UInt64 = 42
func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}
func value() -> Double { (Double(next() >> 11) / Double(1 << 53) - 0.5) * 3 }
let orders = [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3], [1, 2, 3, 4, 0], [3, 4, 0, 2, 1], [0, 2, 1, 4, 3]]
for n in 0..<4096 {
    let canonical = KeepCalmMotion(id: MessageID(randomHigh: next(), randomLow: next()), x: value(), y: value(), z: value())
    let m = canonical
    let members = ["\"id\":\"\(m.id)\"", "\"type\":\"Combined\"", "\"x\":\(m.x)", "\"y\":\(m.y)", "\"z\":\(m.z)"]
    let payload = "{" + orders[n % 6].map { members[$0] }.joined(separator: ",") + "}"
    let text = n % 2 == 0 ? "{\"type\":\"MotionData\",\"payload\":\(payload)}" : "{\"payload\":\(payload),\"type\":\"MotionData\"}"
    messages.append(Array(text.utf8))
}
func now() -> Double { var t = timespec(); clock_gettime(CLOCK_MONOTONIC, &t); return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9 }
var sum = 0.0, decoded = 0
let start = now()
while decoded < total {
    for message in messages {
        if case .success(let motion) = KeepCalmJSON.decodeResult(message) { sum += motion.y }
    }
    decoded += messages.count
}
let seconds = now() - start
let rate = Double(decoded) / seconds
print("keepcalm-json decode: \(decoded) messages in \(seconds) s = \(Int(rate)) messages/s (checksum \(sum))")
// The anchor: Foundation's parser on the same messages, a tenth as many (it is slower).
let anchorData = messages.map { Data($0) }
var anchorSum = 0.0, anchored = 0
let anchorStart = now()
while anchored < total / 10 {
    for data in anchorData {
        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           let payload = object["payload"] as? [String: Any], let y = payload["y"] as? Double,
           payload["x"] is Double, payload["z"] is Double, payload["id"] is String { anchorSum += y }
    }
    anchored += anchorData.count
}
let anchorRate = Double(anchored) / (now() - anchorStart)
print("anchor, JSONSerialization: \(anchored) messages = \(Int(anchorRate)) messages/s (checksum \(anchorSum)); kinetrace is \(String(format: "%.1f", rate / anchorRate))× the anchor")
SWIFT
swiftc -O -wmo -parse-as-library -module-name KinetraceJSON -emit-module -emit-module-path "$work/KinetraceJSON.swiftmodule" \
    -emit-object -o "$work/json.o" Sources/Support/KinetraceJSON/*.swift
# Built from inside $work: swiftc leaves the driver's module files in the current directory.
wire_sources=$(find "$PWD/Sources/Wire/KinetraceWire" -name '*.swift' | sort)
(cd "$work" && swiftc -O -wmo -I "$work" -module-name Driver -o "$work/decode-rate" "$work/json.o" \
    $wire_sources "$work/main.swift")
"$work/decode-rate" "${1:-1000000}"
