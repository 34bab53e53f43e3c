// The TCP reassembler (Sources/Formats/KinetracePcap/TCPReassembler.swift),
// driven by a byte-coded list of segments:
//   byte 0: bit 0 set = tiny limits (so the buffer bounds are reached), else the defaults;
//   then per segment: [who] [flags] [sequence, 4 bytes little-endian] [length] [payload]
//   who: bits 0-1 pick one of four clients, bit 2 the direction (set: from the
//   host), bits 3-7 the time step in ms (so times never go backwards).
// Checks, per direction: chunks tile the stream (each starts where the last
// ended plus the bytes reported missing), the first chunk starts at offset 0
// and announces the start, nothing follows an end, times never go backwards,
// each chunk's bytes are bytes some segment of that direction carried, every
// started direction is ended by finish(), and the buffers stay within the limits.
import KinetracePcap
import KinetraceTrace

let host = Endpoint(host: "10.0.0.100", port: 47130)
let clients = (0..<4).map { Endpoint(host: "10.0.0.\($0 + 1)", port: UInt16(40_000 + $0)) }

struct DirectionKey: Hashable { var source: Endpoint; var destination: Endpoint }

struct DirectionState {
    var next: Int
    var lastTimeNs: Int64
    var open = true
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTCP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    var limits = TCPReassembler.Limits()
    if input[0] & 1 == 1 {
        limits.bufferedBytesPerDirection = 64
        limits.bufferedSegmentsPerDirection = 4
        limits.bufferedBytesTotal = 160
        limits.directions = 4
    }
    var reassembler = TCPReassembler(limits: limits)
    var sent: [DirectionKey: [[UInt8]]] = [:]
    var states: [DirectionKey: DirectionState] = [:]
    var timeNs: Int64 = 1_000_000_000
    var at = 1
    var chunks: [StreamChunk] = []
    while at + 7 <= size {
        let who = input[at], flags = input[at + 1]
        let sequence = UInt32(input[at + 2]) | UInt32(input[at + 3]) << 8 | UInt32(input[at + 4]) << 16 | UInt32(input[at + 5]) << 24
        let length = min(Int(input[at + 6]), size - at - 7)
        let payload = Array(input[(at + 7)..<(at + 7 + length)])
        at += 7 + length
        timeNs += Int64(who >> 3) * 1_000_000
        let client = clients[Int(who & 3)]
        let fromHost = who & 4 != 0
        let key = DirectionKey(source: fromHost ? host : client, destination: fromHost ? client : host)
        if !payload.isEmpty { sent[key, default: []].append(payload) }
        chunks.removeAll(keepingCapacity: true)
        reassembler.add(TCPSegment(timeNs: timeNs, direction: fromHost ? .hostToController : .controllerToHost,
                                   source: key.source, destination: key.destination, sequence: sequence, flags: flags,
                                   payload: payload), into: &chunks)
        check(chunks, &states, sent)
        invariant(reassembler.bufferedBytes <= limits.bufferedBytesTotal, "\(reassembler.bufferedBytes) bytes buffered")
        invariant(reassembler.largestDirectionBuffer <= limits.bufferedBytesPerDirection, "a direction buffers \(reassembler.largestDirectionBuffer) bytes")
        invariant(reassembler.trackedDirections <= limits.directions, "\(reassembler.trackedDirections) directions tracked")
    }
    check(reassembler.finish(), &states, sent)
    for (key, state) in states { invariant(!state.open, "\(key.source) → \(key.destination) never ended") }
    invariant(reassembler.bufferedBytes == 0, "bytes still buffered after finish")
    return 0
}

func check(_ chunks: [StreamChunk], _ states: inout [DirectionKey: DirectionState], _ sent: [DirectionKey: [[UInt8]]]) {
    for chunk in chunks {
        let key = DirectionKey(source: chunk.source, destination: chunk.destination)
        invariant(chunk.missingBefore >= 0 && chunk.offset >= chunk.missingBefore, "chunk at \(chunk.offset) missing \(chunk.missingBefore)")
        if chunk.startedWithHandshake != nil {
            invariant(states[key]?.open != true, "\(key.source) → \(key.destination) started again before it ended")
            invariant(chunk.offset - chunk.missingBefore == 0, "a direction's first chunk at \(chunk.offset - chunk.missingBefore), not 0")
            states[key] = DirectionState(next: 0, lastTimeNs: chunk.timeNs)
        }
        guard var state = states[key], state.open else {
            invariant(false, "a chunk for \(key.source) → \(key.destination), which has not started or has ended")
            return
        }
        invariant(chunk.offset - chunk.missingBefore == state.next, "chunk at \(chunk.offset) (−\(chunk.missingBefore) missing), expected \(state.next)")
        invariant(chunk.timeNs >= state.lastTimeNs, "chunk time went backwards")
        if !chunk.bytes.isEmpty {
            invariant(sent[key, default: []].contains { contains($0, chunk.bytes) }, "chunk bytes that no segment of the direction carried")
        }
        state.next = chunk.offset + chunk.bytes.count
        state.lastTimeNs = chunk.timeNs
        if chunk.end != nil { state.open = false }
        states[key] = state
    }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
        if haystack[start..<start + needle.count].elementsEqual(needle) { return true }
    }
    return false
}
