/// The head of an HTTP/1.1 request or response (a start line and header fields, up to the
/// empty line): the opening handshake of RFC 6455 section 4, as a controller reads its host's
/// answer and as a capture reader reads both.
package struct HTTPHead: Hashable, Sendable {
    /// `GET /path HTTP/1.1`, or `HTTP/1.1 101 Switching Protocols`.
    package var startLine: String
    /// Header fields in order, names as sent.
    package var fields: [Field]

    package struct Field: Hashable, Sendable {
        package var name: String
        package var value: String
    }

    /// The longest head read before giving up on a peer (browsers send under 1 KiB).
    package static let defaultMaximumBytes = 8 * 1024
    /// The most header fields read.
    package static let maximumFields = 64

    /// The first field named `name` (case-insensitive), its value trimmed.
    package func value(_ name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    /// Whether the comma-separated field `name` lists `token` (case-insensitive), as
    /// `Connection: keep-alive, Upgrade` does.
    package func lists(_ name: String, _ token: String) -> Bool {
        let wanted = name.lowercased(), token = token.lowercased()
        return fields.contains { field in
            field.name.lowercased() == wanted
                && field.value.split(separator: ",").contains { $0.trimmingSpaces.lowercased() == token }
        }
    }

    private var startTokens: [Substring] { startLine.split(separator: " ", maxSplits: 2) }

    /// A request's method and target; nil for a response.
    package var request: (method: String, target: String)? {
        let tokens = startTokens
        guard tokens.count == 3, tokens[2].hasPrefix("HTTP/") else { return nil }
        return (String(tokens[0]), String(tokens[1]))
    }

    /// A response's status code; nil for a request.
    package var status: Int? {
        let tokens = startTokens
        // Three digits (RFC 9110 section 15): `Int` alone would also take "+01" and "-31".
        guard tokens.count >= 2, tokens[0].hasPrefix("HTTP/"), tokens[1].utf8.count == 3,
              tokens[1].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(tokens[1])
    }

    /// Reads a head from the front of `bytes`: the head and the bytes it took, nil while the
    /// empty line has not come. Throws when the head is longer than `maximumBytes` or is not HTTP.
    package static func read(_ bytes: ArraySlice<UInt8>, maximumBytes: Int = defaultMaximumBytes) throws(WebSocketError) -> (head: HTTPHead, length: Int)? {
        let base = bytes.startIndex
        var end: Int?
        var index = base
        while index + 3 < bytes.endIndex, index - base + 4 <= maximumBytes {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                end = index
                break
            }
            index += 1
        }
        guard let end else {
            if bytes.count >= maximumBytes {
                throw WebSocketError(.handshakeTooLong, offset: 0, "no end of the HTTP head within \(maximumBytes) bytes")
            }
            return nil
        }
        var lines = bytes[base..<end].split(separator: 10, omittingEmptySubsequences: false).map { line -> ArraySlice<UInt8> in
            line.last == 13 ? line.dropLast() : line
        }
        guard !lines.isEmpty, let startLine = String(validating: lines.removeFirst(), as: UTF8.self), !startLine.isEmpty else {
            throw WebSocketError(.badHandshake, offset: 0, "the HTTP head has no start line")
        }
        guard lines.count <= maximumFields else {
            throw WebSocketError(.badHandshake, offset: 0, "more than \(maximumFields) header fields")
        }
        var fields: [Field] = []
        for line in lines {
            guard let text = String(validating: line, as: UTF8.self), let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
                // The line's own place: a line may end in a bare LF, so counting CRLFs would not do.
                throw WebSocketError(.badHandshake, offset: line.startIndex - base, "a header line that is not NAME: VALUE")
            }
            fields.append(Field(name: String(text[..<colon]), value: String(text[text.index(after: colon)...].trimmingSpaces)))
        }
        let head = HTTPHead(startLine: startLine, fields: fields)
        guard head.request != nil || head.status != nil else {
            throw WebSocketError(.badHandshake, offset: 0, "the start line is neither a request nor a response: \(startLine.prefix(60))")
        }
        return (head, end - base + 4)
    }
}

extension StringProtocol {
    var trimmingSpaces: Substring {
        let text = Substring(self)
        guard let first = text.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let last = text.lastIndex(where: { $0 != " " && $0 != "\t" })!
        return text[first...last]
    }
}

/// The opening handshake's fixed parts (RFC 6455 section 4).
package enum WebSocketHandshake {
    /// The GUID a server appends to the client's key before hashing it (section 1.3).
    package static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// A client's upgrade request for `path` on `host` (HOST:PORT), with its 16-byte `key` in base64.
    package static func request(host: String, path: String, key: String) -> [UInt8] {
        Array(("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nUser-Agent: kinetrace\r\n\r\n").utf8)
    }

    /// Base64 (RFC 4648, with padding), for the handshake's key and accept values.
    package static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = UInt32(0)
            for (position, byte) in chunk.enumerated() { value |= UInt32(byte) << UInt32(16 - 8 * position) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[Int((value >> UInt32(18 - 6 * position)) & 0x3F)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
