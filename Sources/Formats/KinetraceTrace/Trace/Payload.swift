/// A message's bytes. Up to 40 bytes (every MotionLink message) are stored
/// inline, so making a record costs no heap allocation; longer payloads
/// (invalid datagrams) go to an array. Compares, hashes and iterates like
/// `[UInt8]`.
package struct Payload: RandomAccessCollection, Hashable, Sendable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The largest payload kept inline.
    package static let inlineCapacity = 40

    private typealias Words = (UInt64, UInt64, UInt64, UInt64, UInt64)
    private enum Storage: Sendable {
        case inline(count: UInt8, words: Words)
        case heap([UInt8])
    }

    private var storage: Storage

    package init() { storage = .inline(count: 0, words: (0, 0, 0, 0, 0)) }

    /// Copies `bytes`.
    package init(copying bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= Self.inlineCapacity else {
            storage = .heap(Array(bytes))
            return
        }
        var words: Words = (0, 0, 0, 0, 0)
        if bytes.count > 0 {
            withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        }
        storage = .inline(count: UInt8(bytes.count), words: words)
    }

    package init(_ bytes: some Sequence<UInt8>) {
        var array = Array(bytes)
        self = array.withUnsafeMutableBytes { Payload(copying: UnsafeRawBufferPointer($0)) }
    }

    package init(arrayLiteral elements: UInt8...) { self.init(elements) }

    /// Makes a payload of `count` bytes, written by `body`.
    package init<E: Error>(count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        guard count <= Self.inlineCapacity else {
            var array = [UInt8](repeating: 0, count: count)
            // withUnsafeMutableBytes only rethrows untyped errors; carry the typed one out.
            let failure: E? = array.withUnsafeMutableBytes { raw in
                do throws(E) { try body(raw); return nil } catch { return error }
            }
            if let failure { throw failure }
            storage = .heap(array)
            return
        }
        var words: Words = (0, 0, 0, 0, 0)
        let failure: E? = withUnsafeMutableBytes(of: &words) { raw in
            do throws(E) { try body(UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])); return nil } catch { return error }
        }
        if let failure { throw failure }
        storage = .inline(count: UInt8(count), words: words)
    }

    /// Calls `body` with the bytes, without copying them.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .heap(let array):
            return try array.withUnsafeBytes(body)
        case .inline(let count, var words):
            return try Swift.withUnsafeBytes(of: &words) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(count)])) }
        }
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int {
        switch storage {
        case .inline(let count, _): return Int(count)
        case .heap(let array): return array.count
        }
    }

    package subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < endIndex, "Payload index out of range")
        return withUnsafeBytes { $0[position] }
    }

    /// The bytes as an array.
    package var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    package var description: String { bytes.description }

    package static func == (a: Payload, b: Payload) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }

    package static func == (a: Payload, b: [UInt8]) -> Bool { a.count == b.count && a.elementsEqual(b) }
    package static func == (a: [UInt8], b: Payload) -> Bool { b == a }
    package static func != (a: Payload, b: [UInt8]) -> Bool { !(a == b) }
    package static func != (a: [UInt8], b: Payload) -> Bool { !(b == a) }

    package func hash(into hasher: inout Hasher) {
        withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
