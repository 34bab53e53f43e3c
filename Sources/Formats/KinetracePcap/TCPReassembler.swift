import KinetraceTrace
import KinetraceWire

/// Puts captured TCP segments back into stream order, per connection and
/// direction (keyed by the four-tuple), as a passive observer that sees
/// what the wire carried, not what either end accepted.
///
/// - A SYN sets offset 0 to the byte after it (it consumes one sequence
///   number). Without one (a capture begun mid-stream) the first segment
///   with data sets offset 0, and the direction's first chunk says so.
/// - Sequence numbers are compared in serial-number arithmetic (RFC 1982)
///   against the next expected one, and offsets kept as `Int`, so a stream
///   may run past 2³² bytes and across the sequence wrap.
/// - Bytes already delivered or already buffered are never delivered again:
///   the first copy captured wins, later copies are counted as duplicates.
/// - Each chunk is one segment's new bytes, stamped with the capture time
///   of the packet that made them deliverable: the segment's own, or, for
///   one that waited behind a hole, that of the segment that filled it (when
///   a host could first have read it), so chunk times never go backwards.
/// - Segments beyond the next expected byte wait until the hole fills. A hole
///   that never fills becomes a gap (the chunk after it carries
///   `missingBefore`) when the direction ends, when the capture ends, or
///   when what waits behind it passes the `Limits`.
/// - FIN ends a direction once every byte before it is delivered; RST ends
///   both. A later SYN on the same four-tuple with another initial sequence
///   number is a new connection with new offsets.
///
/// Memory is bounded against hostile captures: per direction and in total
/// (bytes and segments waiting), and in the number of directions tracked.
/// A waiting segment is charged its bytes and `segmentOverhead`, what holding
/// it costs besides them, so a flood of one-byte segments meets the byte bounds
/// as soon as full ones would. What the bounds cost is counted in `counts`.
package struct TCPReassembler: StreamReassembler {
    /// The bounds on what a capture can make the reassembler hold.
    package struct Limits: Hashable, Sendable {
        /// Out-of-order bytes one direction may hold behind a hole before the hole becomes a gap,
        /// each waiting segment counted with its `segmentOverhead`.
        package var bufferedBytesPerDirection = 1 << 20
        /// Out-of-order segments (after trimming overlaps) one direction may hold.
        package var bufferedSegmentsPerDirection = 4096
        /// Out-of-order bytes all directions together may hold, counted the same way; past it the fullest direction gives up its hole.
        package var bufferedBytesTotal = 64 << 20
        /// Directions tracked at once, ended ones (kept to recognise their retransmissions) included.
        package var directions = 16_384

        package init() {}
    }

    /// What the reassembler saw and did, for reports.
    package struct Counts: Hashable, Sendable {
        /// Segments handed in.
        package var segments = 0
        /// Directions of connections started, by a SYN or mid-stream.
        package var directions = 0
        /// Of those, directions whose SYN was not captured.
        package var midStreamStarts = 0
        /// Segments that arrived beyond the next expected byte and waited.
        package var outOfOrderSegments = 0
        /// Bytes captured again (retransmitted or overlapping) and discarded in favour of the first copy.
        package var duplicateBytes = 0
        /// Holes that never filled, and the bytes missing in them.
        package var gaps = 0
        package var missingBytes = 0
        /// Of the gaps, those declared early because too much waited behind the hole.
        package var gapsForcedByBuffer = 0
        /// The most out-of-order bytes waiting at once over all directions, overhead included:
        /// never more than `Limits.bufferedBytesTotal` once a segment has been dealt with.
        package var peakBufferedBytes = 0
        /// Directions ended to stay within `Limits.directions`.
        package var evictedDirections = 0
        /// Bytes of data sent after the direction's FIN, or after a RST.
        package var bytesAfterEnd = 0
        /// Bytes before offset 0 of a direction begun mid-stream (captured late, out of order).
        package var bytesBeforeStart = 0
        /// FINs and RSTs without data of no tracked direction (ends of connections whose data the capture never saw).
        /// Bare ACKs are not looked at.
        package var segmentsIgnored = 0

        package init() {}
    }

    package let limits: Limits
    package private(set) var counts = Counts()

    /// What one waiting segment costs besides its bytes, as the byte bounds charge it: its bytes'
    /// array header (32) and malloc's bookkeeping and rounding (16), and its entry in the direction's
    /// list (16, and as much again of the list's room to grow). Uncharged, 4,096 one-byte segments
    /// behind a hole in each of 1,000 connections held 4 MB of bytes and took 4 GB.
    package static let segmentOverhead = 80

    private struct FlowKey: Hashable {
        var source: Endpoint
        var destination: Endpoint
        var reversed: FlowKey { FlowKey(source: destination, destination: source) }
    }

    /// Bytes waiting behind a hole: disjoint, sorted by offset.
    private struct Piece {
        var offset: Int
        var bytes: [UInt8]
        var end: Int { offset + bytes.count }
    }

    private struct Flow {
        var key: FlowKey
        var direction: Direction
        /// The sequence number of stream offset 0.
        var base: UInt32
        /// The SYN's sequence number, when the SYN was seen.
        var initialSequence: UInt32?
        /// Offset of the next byte to deliver.
        var delivered = 0
        var pending: [Piece] = []
        /// What `pending` is charged: its bytes and `segmentOverhead` for each piece.
        var pendingCost = 0
        /// The offset just past the last byte, once a FIN said where the stream ends.
        var finOffset: Int?
        var ended = false
        /// The start still to be announced on the next chunk.
        var announceStart: Bool?
        var lastTimeNs: Int64
        /// Creation order, so the end of the capture reports directions deterministically.
        var serial: Int

        /// The stream offset of `sequence`, taken as the nearer of its two readings around the next expected byte.
        func offset(of sequence: UInt32) -> Int {
            let expected = base &+ UInt32(truncatingIfNeeded: delivered)
            return delivered + Int(Int32(bitPattern: sequence &- expected))
        }
    }

    private var flows: [Flow?] = []
    private var freeSlots: [Int] = []
    private var slots: [FlowKey: Int] = [:]
    private var liveCount = 0
    private var nextSerial = 0
    private var totalPendingCost = 0
    /// The last direction looked up: a capture's segments come in runs of one connection.
    private var lastKey: FlowKey?
    private var lastSlot = 0
    /// The latest capture time handed in: what is delivered now is stamped with it.
    private var now: Int64 = .min
    /// Once the capture has ended: the directions `finishNext` has still to end, the next last.
    private var finishing: [Int]?

    /// Out-of-order bytes waiting now, over all directions, each segment's overhead included.
    package var bufferedBytes: Int { totalPendingCost }
    /// The most out-of-order bytes one direction holds now, each segment's overhead included.
    package var largestDirectionBuffer: Int { flows.reduce(0) { max($0, $1?.pendingCost ?? 0) } }
    /// Directions tracked now, ended ones included.
    package var trackedDirections: Int { liveCount }

    package init(limits: Limits = Limits()) {
        precondition(limits.bufferedBytesPerDirection > 0 && limits.bufferedSegmentsPerDirection > 0
                     && limits.bufferedBytesTotal > 0 && limits.directions > 1, "reassembly limits must be positive")
        self.limits = limits
    }

    private static let fin: UInt8 = 0x01, syn: UInt8 = 0x02, rst: UInt8 = 0x04, ack: UInt8 = 0x10

    package mutating func add(_ segment: TCPSegment) -> [StreamChunk] {
        var out: [StreamChunk] = []
        add(segment, into: &out)
        return out
    }

    /// As `add(_:)`, appending to `out`: the reader's loop reuses one array.
    package mutating func add(_ segment: TCPSegment, into out: inout [StreamChunk]) {
        counts.segments += 1
        now = max(now, segment.timeNs)
        let flags = segment.flags
        // A bare ACK changes nothing here: half of a stream capture is the receiver's, not worth a lookup.
        if segment.payload.isEmpty && flags & (Self.syn | Self.fin | Self.rst) == 0 { return }
        let key = FlowKey(source: segment.source, destination: segment.destination)
        var slot = lookup(key)
        if flags & Self.syn != 0 {
            if let known = slot {
                if flows[known]!.initialSequence == segment.sequence {
                    // A retransmitted SYN: nothing new, unless it carries data.
                } else {
                    // A new connection on this four-tuple; a bare SYN also ends the old reverse direction.
                    endFlow(at: known, how: .reused, timeNs: now, into: &out)
                    if flags & Self.ack == 0, let reverse = lookup(key.reversed) {
                        endFlow(at: reverse, how: .reused, timeNs: now, into: &out)
                    }
                    slot = nil
                }
            }
            if slot == nil {
                slot = createFlow(key, segment: segment, base: segment.sequence &+ 1, handshake: true, into: &out)
            }
        } else if slot == nil {
            guard !segment.payload.isEmpty else {
                counts.segmentsIgnored += 1
                return
            }
            slot = createFlow(key, segment: segment, base: segment.sequence, handshake: false, into: &out)
        }
        let index = slot!
        flows[index]!.lastTimeNs = segment.timeNs
        if flags & Self.rst != 0 {
            endFlow(at: index, how: .rst, timeNs: now, into: &out)
            if let reverse = lookup(key.reversed) { endFlow(at: reverse, how: .rst, timeNs: now, into: &out) }
            return
        }
        let dataSequence = flags & Self.syn != 0 ? segment.sequence &+ 1 : segment.sequence
        let start = flows[index]!.offset(of: dataSequence)
        if flows[index]!.ended {
            let after = start + segment.payload.count - (flows[index]!.finOffset ?? flows[index]!.delivered)
            counts.bytesAfterEnd += max(0, min(after, segment.payload.count))
            counts.duplicateBytes += segment.payload.count - max(0, min(after, segment.payload.count))
            return
        }
        if !segment.payload.isEmpty {
            accept(segment, at: start, slot: index, into: &out)
        }
        if flags & Self.fin != 0 && flows[index]!.finOffset == nil {
            flows[index]!.finOffset = max(start + segment.payload.count, flows[index]!.delivered)
        }
        if let finOffset = flows[index]!.finOffset, flows[index]!.delivered >= finOffset {
            endFlow(at: index, how: .fin, timeNs: now, into: &out)
        }
    }

    package mutating func finish() -> [StreamChunk] {
        var out: [StreamChunk] = []
        while finishNext(into: &out) {}
        return out
    }

    /// The capture ended: ends the next direction still open (in the order they began), appending
    /// its chunks to `out`; false once none is left. What waited behind holes comes out one
    /// direction at a time, so a reader need hold no more than one direction's chunks at once
    /// (all of them at once took as much again as the bound on what waits). Segments added after
    /// the first call are not expected.
    package mutating func finishNext(into out: inout [StreamChunk]) -> Bool {
        if finishing == nil {
            // Latest first, to pop from the end.
            finishing = flows.indices.filter { flows[$0].map { !$0.ended } ?? false }.sorted { flows[$0]!.serial > flows[$1]!.serial }
        }
        while let index = finishing!.popLast() {
            guard let flow = flows[index], !flow.ended else { continue }
            endFlow(at: index, how: flow.finOffset != nil ? .fin : .captureEnd, timeNs: now, into: &out)
            return true
        }
        return false
    }

    // MARK: Directions

    private mutating func lookup(_ key: FlowKey) -> Int? {
        if let lastKey, lastKey == key { return lastSlot }
        guard let slot = slots[key] else { return nil }
        lastKey = key
        lastSlot = slot
        return slot
    }

    private mutating func createFlow(_ key: FlowKey, segment: TCPSegment, base: UInt32, handshake: Bool,
                                     into out: inout [StreamChunk]) -> Int {
        if let old = slots[key] { release(old) }
        if liveCount >= limits.directions { makeRoom(timeNs: now, into: &out) }
        counts.directions += 1
        if !handshake { counts.midStreamStarts += 1 }
        let flow = Flow(key: key, direction: segment.direction, base: base, initialSequence: handshake ? segment.sequence : nil,
                        announceStart: handshake, lastTimeNs: segment.timeNs, serial: nextSerial)
        nextSerial += 1
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            flows[slot] = flow
        } else {
            slot = flows.count
            flows.append(flow)
        }
        slots[key] = slot
        liveCount += 1
        lastKey = key
        lastSlot = slot
        if handshake {
            // Announce the start now: a SYN carries no stream bytes of its own.
            out.append(chunk(slot, timeNs: now, bytes: []))
        }
        return slot
    }

    private mutating func release(_ slot: Int) {
        guard let flow = flows[slot] else { return }
        totalPendingCost -= flow.pendingCost
        slots[flow.key] = nil
        if lastKey == flow.key { lastKey = nil }
        flows[slot] = nil
        freeSlots.append(slot)
        liveCount -= 1
    }

    /// Forgets every ended direction; if that is not enough, ends the quarter of the open ones idle longest.
    private mutating func makeRoom(timeNs: Int64, into out: inout [StreamChunk]) {
        for slot in flows.indices where flows[slot]?.ended == true { release(slot) }
        guard liveCount >= limits.directions else { return }
        let idle = flows.indices.filter { flows[$0] != nil }
            .sorted { (flows[$0]!.lastTimeNs, flows[$0]!.serial) < (flows[$1]!.lastTimeNs, flows[$1]!.serial) }
            .prefix(max(1, limits.directions / 4))
        for slot in idle {
            endFlow(at: slot, how: .evicted, timeNs: timeNs, into: &out)
            counts.evictedDirections += 1
            release(slot)
        }
    }

    /// Delivers what waits (with gaps before it), then the FIN's missing tail if any, and marks the end.
    private mutating func endFlow(at slot: Int, how: StreamEnd, timeNs: Int64, into out: inout [StreamChunk]) {
        guard !flows[slot]!.ended else { return }
        while !flows[slot]!.pending.isEmpty { skipHole(slot, into: &out) }
        var last = chunk(slot, timeNs: timeNs, bytes: [])
        if let finOffset = flows[slot]!.finOffset, finOffset > flows[slot]!.delivered, how == .fin {
            let missing = finOffset - flows[slot]!.delivered
            last.missingBefore = missing
            last.offset = finOffset
            counts.gaps += 1
            counts.missingBytes += missing
            flows[slot]!.delivered = finOffset
        }
        last.end = how
        flows[slot]!.ended = true
        if flows[slot]!.finOffset == nil { flows[slot]!.finOffset = flows[slot]!.delivered }
        out.append(last)
    }

    // MARK: Bytes

    private mutating func chunk(_ slot: Int, timeNs: Int64, bytes: [UInt8]) -> StreamChunk {
        let flow = flows[slot]!
        var chunk = StreamChunk(timeNs: timeNs, direction: flow.direction, source: flow.key.source, destination: flow.key.destination,
                                bytes: bytes, offset: flow.delivered)
        if let start = flow.announceStart {
            chunk.startedWithHandshake = start
            flows[slot]!.announceStart = nil
        }
        return chunk
    }

    private mutating func accept(_ segment: TCPSegment, at start: Int, slot: Int, into out: inout [StreamChunk]) {
        var start = start
        var bytes = segment.payload
        var end = start + bytes.count
        if start < 0 {
            // Before offset 0 of a direction begun mid-stream: never part of what was delivered.
            let before = min(-start, bytes.count)
            counts.bytesBeforeStart += before
            guard end > 0 else { return }
            bytes = Array(bytes[before...])
            start = 0
        }
        let delivered = flows[slot]!.delivered
        if end <= delivered {
            counts.duplicateBytes += bytes.count
            return
        }
        if start < delivered {
            counts.duplicateBytes += delivered - start
            bytes = Array(bytes[(delivered - start)...])
            start = delivered
        }
        end = start + bytes.count
        if start == delivered && flows[slot]!.pending.isEmpty {
            // The common case: the next bytes, nothing waiting.
            deliver(slot, Piece(offset: start, bytes: bytes), into: &out)
            return
        }
        if start > delivered { counts.outOfOrderSegments += 1 }
        insertPending(slot, Piece(offset: start, bytes: bytes))
        drain(slot, into: &out)
        enforceBounds(slot, into: &out)
    }

    private mutating func deliver(_ slot: Int, _ piece: Piece, into out: inout [StreamChunk]) {
        out.append(chunk(slot, timeNs: now, bytes: piece.bytes))
        flows[slot]!.delivered = piece.end
    }

    /// Adds the parts of `piece` no waiting piece already covers (the first copy wins).
    private mutating func insertPending(_ slot: Int, _ piece: Piece) {
        var pending = flows[slot]!.pending
        flows[slot]!.pending = []  // keep the array uniquely referenced while it is edited
        // The first waiting piece that ends after the new one starts.
        var low = 0, high = pending.count
        while low < high {
            let mid = (low + high) / 2
            if pending[mid].end <= piece.offset { low = mid + 1 } else { high = mid }
        }
        var index = low
        var cursor = piece.offset
        var added = 0
        while cursor < piece.end {
            if index < pending.count && pending[index].offset <= cursor {
                let covered = min(pending[index].end, piece.end) - cursor
                counts.duplicateBytes += covered
                cursor += covered
                index += 1
                continue
            }
            let stop = index < pending.count ? min(piece.end, pending[index].offset) : piece.end
            let bytes = cursor == piece.offset && stop == piece.end
                ? piece.bytes : Array(piece.bytes[(cursor - piece.offset)..<(stop - piece.offset)])
            pending.insert(Piece(offset: cursor, bytes: bytes), at: index)
            added += stop - cursor + Self.segmentOverhead
            index += 1
            cursor = stop
        }
        flows[slot]!.pending = pending
        flows[slot]!.pendingCost += added
        totalPendingCost += added
    }

    /// Delivers the waiting pieces that now follow on.
    private mutating func drain(_ slot: Int, into out: inout [StreamChunk]) {
        var taken = 0
        while taken < flows[slot]!.pending.count && flows[slot]!.pending[taken].offset == flows[slot]!.delivered {
            let piece = flows[slot]!.pending[taken]
            deliver(slot, piece, into: &out)
            flows[slot]!.pendingCost -= piece.bytes.count + Self.segmentOverhead
            totalPendingCost -= piece.bytes.count + Self.segmentOverhead
            taken += 1
        }
        if taken > 0 { flows[slot]!.pending.removeFirst(taken) }
    }

    /// Gives up on the hole before the first waiting piece: that piece comes next, marked with what is missing.
    private mutating func skipHole(_ slot: Int, into out: inout [StreamChunk]) {
        guard let first = flows[slot]!.pending.first else { return }
        let missing = first.offset - flows[slot]!.delivered
        if missing > 0 {
            counts.gaps += 1
            counts.missingBytes += missing
            flows[slot]!.delivered = first.offset
            let before = out.count
            drain(slot, into: &out)
            out[before].missingBefore = missing
        } else {
            drain(slot, into: &out)
        }
    }

    private mutating func enforceBounds(_ slot: Int, into out: inout [StreamChunk]) {
        while flows[slot]!.pendingCost > limits.bufferedBytesPerDirection
                || flows[slot]!.pending.count > limits.bufferedSegmentsPerDirection {
            counts.gapsForcedByBuffer += 1
            skipHole(slot, into: &out)
        }
        while totalPendingCost > limits.bufferedBytesTotal {
            guard let fullest = flows.indices.max(by: { (flows[$0]?.pendingCost ?? 0) < (flows[$1]?.pendingCost ?? 0) }),
                  flows[fullest]!.pendingCost > 0 else { break }
            counts.gapsForcedByBuffer += 1
            skipHole(fullest, into: &out)
        }
        counts.peakBufferedBytes = max(counts.peakBufferedBytes, totalPendingCost)
    }
}
