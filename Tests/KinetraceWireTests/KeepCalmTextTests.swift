import Testing
import KinetraceWire

/// KC-MSG-3, KC-MSG-6 and KC-MSG-7: the text of a message is UTF-8, names
/// and strings compare with their escapes decoded, and no name repeats at
/// one level, known or not.
@Suite struct KeepCalmTextTests {
    static let idText = "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"
    static let tail = #""x":0.125,"y":0.75,"z":-0.5"#

    /// The ill-formed sequences KC-MSG-6 names.
    static let illFormed: [(name: String, bytes: [UInt8])] = [
        ("a lone continuation byte", [0x80]),
        ("an overlong '/' in two bytes", [0xC0, 0xAF]),
        ("an overlong '/' in three bytes", [0xE0, 0x80, 0xAF]),
        ("the surrogate U+D800 encoded", [0xED, 0xA0, 0x80]),
        ("U+110000, above U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
        ("a three-byte sequence cut short", [0xE2, 0x82]),
    ] + (0xF5...0xFF).map { ("the byte 0x\(String($0, radix: 16, uppercase: true))", [UInt8($0)]) }

    /// Well-formed sequences at the edges of those ranges.
    static let wellFormed: [[UInt8]] = [
        [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
    ]

    /// Messages with a place `@@` for bytes: names and values, known and unknown, at both levels and nested.
    static let places: [(name: String, template: String, validWhenWellFormed: Bool)] = [
        ("an envelope member's name", #"{"type":"MotionData","n@@":1,"payload":{"id":"\#(idText)","type":"Combined",\#(tail)}}"#, true),
        ("an envelope member's value", #"{"type":"MotionData","note":"a@@b","payload":{"id":"\#(idText)","type":"Combined",\#(tail)}}"#, true),
        ("a payload member's name", #"{"type":"MotionData","payload":{"id":"\#(idText)","type":"Combined",\#(tail),"@@":1}}"#, true),
        ("a payload member's value", #"{"type":"MotionData","payload":{"id":"\#(idText)","note":"@@","type":"Combined",\#(tail)}}"#, true),
        ("a string nested in an unknown member", #"{"type":"MotionData","extra":[{"k":"@@"}],"payload":{"id":"\#(idText)","type":"Combined",\#(tail)}}"#, true),
        ("the envelope's type", #"{"type":"MotionData@@","payload":{"id":"\#(idText)","type":"Combined",\#(tail)}}"#, false),
        ("the payload's type", #"{"type":"MotionData","payload":{"id":"\#(idText)","type":"Comb@@ined",\#(tail)}}"#, false),
        ("the id", #"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E@@6E5F","type":"Combined",\#(tail)}}"#, false),
    ]

    static func filling(_ template: String, with bytes: [UInt8]) -> (message: [UInt8], at: Int) {
        let parts = template.components(separatedBy: "@@")
        let head = Array(parts[0].utf8)
        return (head + bytes + Array(parts[1].utf8), head.count)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The message every valid text here carries (motion-canonical's).
    static let canonical = KeepCalmMotion(id: MessageID(high: 0xE621_E1F8_C36C_495A, low: 0x93FC_0C24_7A3E_6E5F), x: 0.125, y: 0.75, z: -0.5)

    @Test func illFormedUTF8AnywhereIsMalformedAtItsFirstByte() {
        var checked = 0
        for place in Self.places {
            for sequence in Self.illFormed {
                let (message, at) = Self.filling(place.template, with: sequence.bytes)
                let error = KeepCalmJSON.facts(message).error
                #expect(error?.code == .malformed && error?.offset == at,
                        "\(sequence.name) in \(place.name): \(String(describing: error))")
                checked += 1
            }
        }
        #expect(checked == Self.places.count * 17)
    }

    @Test func wellFormedUTF8IsAcceptedWhereAnyTextIs() {
        for place in Self.places where place.validWhenWellFormed {
            for sequence in Self.wellFormed {
                let message = Self.filling(place.template, with: sequence).message
                #expect(KeepCalmJSON.decodeResult(message) == .success(Self.canonical), "\(sequence) in \(place.name)")
            }
        }
    }

    @Test func escapedNamesAndStringsAreTheTextTheyDecodeTo() {
        let texts = [
            #"{"type":"Motion\u0044ata","payload":{"id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}}"#,
            #"{"type":"\u004D\u006F\u0074\u0069\u006F\u006E\u0044\u0061\u0074\u0061","payload":{"id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(Self.idText)","type":"Comb\u0069ned",\#(Self.tail)}}"#,
            #"{"type":"MotionData","payload":{"id":"E621E1F8\u002DC36C-495A-93FC-0C247A3E6E5F","type":"Combined",\#(Self.tail)}}"#,
            #"{"type":"MotionData","payload":{"id":"\u0045621E1F8\u002dC36C-495A-93FC-0C247A3E6E5\u0046","type":"Combined",\#(Self.tail)}}"#,
            #"{"\u0074ype":"MotionData","p\u0061yload":{"\u0069d":"\#(Self.idText)","typ\u0065":"Combined","\u0078":0.125,"\u0079":0.75,"\u007a":-0.5}}"#,
            #"{"payload":{"z":-0.5,"\u0079":0.75,"x":0.125,"\u0074ype":"\u0043ombined","id":"\#(Self.idText)"},"\u0074ype":"Motion\u0044ata"}"#,
        ]
        for text in texts {
            #expect(KeepCalmJSON.decodeResult(Self.bytes(text)) == .success(Self.canonical), "\(text)")
        }
        // What an escape decodes to is judged like any other text.
        for text in [
            #"{"type":"Motion\u0064ata","payload":{"id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}}"#,
            #"{"type":"MotionData","payload":{"id":"\u0065621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined",\#(Self.tail)}}"#,
            #"{"type":"MotionData","payload":{"id":"E621E1F8\u005FC36C-495A-93FC-0C247A3E6E5F","type":"Combined",\#(Self.tail)}}"#,
        ] {
            #expect(KeepCalmJSON.facts(Self.bytes(text)).error?.code == .malformed, "\(text)")
        }
    }

    @Test func aNameTwiceAtOneLevelIsMalformedComparedDecoded() {
        let payload = #""payload":{"id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}"#
        // Each text and the bytes its second copy of the name starts with (the offset is the ',' before it).
        let cases: [(label: String, text: String, second: String)] = [
            ("an unknown envelope member", #"{"type":"MotionData","sent_by":"a",\#(payload),"sent_by":"b"}"#, #","sent_by""#),
            ("an unknown payload member", #"{"type":"MotionData","payload":{"extra":1,"id":"\#(Self.idText)","type":"Combined","extra":2,\#(Self.tail)}}"#,
             #","extra":2"#),
            ("an envelope x and \\u0078", #"{"x":1,"type":"MotionData",\#(payload),"\u0078":2}"#, #","\u0078""#),
            ("extra and \\u0065xtra in the payload", #"{"type":"MotionData","payload":{"extra":1,"id":"\#(Self.idText)","\u0065xtra":2,"type":"Combined",\#(Self.tail)}}"#,
             #","\u0065xtra""#),
            ("two escapes of one name", #"{"type":"MotionData","\u0061":1,"\u0061":2,\#(payload)}"#, #","\u0061":2"#),
            ("é and \\u00e9", #"{"type":"MotionData","é":1,\#(payload),"\u00e9":2}"#, #","\u00e9""#),
            ("😀 and its surrogate pair", #"{"type":"MotionData","payload":{"😀":1,"id":"\#(Self.idText)","\ud83d\ude00":2,"type":"Combined",\#(Self.tail)}}"#,
             #","\ud83d\ude00""#),
            ("y and \\u0079", #"{"type":"MotionData","payload":{"id":"\#(Self.idText)","type":"Combined",\#(Self.tail),"\u0079":0.5}}"#, #","\u0079""#),
            ("type and \\u0074ype", #"{"type":"MotionData",\#(payload),"\u0074ype":"MotionData"}"#, #","\u0074ype""#),
        ]
        for (label, text, second) in cases {
            let message = Self.bytes(text)
            let at = text.utf8.count - text.components(separatedBy: second).last!.utf8.count - second.utf8.count
            let error = KeepCalmJSON.facts(message).error
            #expect(error?.code == .malformed && error?.offset == at, "\(label): \(String(describing: error)), expected the offset \(at)")
        }
        // Not repeats: the same name at the two levels, names that differ once decoded, and
        // repeats inside an unknown member's value, which a reader ignores (KC-MSG-3).
        for text in [
            #"{"type":"MotionData","note":1,"payload":{"note":2,"id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}}"#,
            #"{"type":"MotionData","a":1,"a\u0000":2,"A":3,\#(payload)}"#,
            #"{"type":"MotionData","extra":{"a":1,"a":2},\#(payload)}"#,
        ] {
            #expect(KeepCalmJSON.decodeResult(Self.bytes(text)) == .success(Self.canonical), "\(text)")
        }
    }

    /// The codec keeps the first eight unknown names of a level in place and the rest in a
    /// hash set: a repeat is found wherever the two copies fall, at both levels.
    @Test func aRepeatIsFoundAmongManyUnknownNames() {
        let payload = #""payload":{"id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}"#
        func names(_ count: Int, escapingEvery escaped: Int = 0) -> [String] {
            (0..<count).map { k in escaped > 0 && k % escaped == 0 ? #""\u006B\#(k)":0"# : #""k\#(k)":0"# }
        }
        var checked = 0
        for count in [1, 7, 8, 9, 16, 350] {
            let distinct = names(count, escapingEvery: 3)
            let envelope = "{" + distinct.joined(separator: ",") + #","type":"MotionData","# + payload + "}"
            #expect(KeepCalmJSON.decodeResult(Self.bytes(envelope)) == .success(Self.canonical), "\(count) distinct names")
            for (first, second) in [(0, count), (count - 1, count), (0, 3 * count)] {
                // The name at `first` again, written plainly, as name number `second`.
                var repeated = names(max(count, second), escapingEvery: 3)
                repeated.insert(#""k\#(first)":1"#, at: second)
                let inEnvelope = "{" + repeated.joined(separator: ",") + #","type":"MotionData","# + payload + "}"
                let inPayload = #"{"type":"MotionData","payload":{"# + repeated.joined(separator: ",") + #","id":"\#(Self.idText)","type":"Combined",\#(Self.tail)}}"#
                for text in [inEnvelope, inPayload] where text.utf8.count <= KeepCalmMotion.maximumSize {
                    let at = text.utf8.count - text.components(separatedBy: #","k\#(first)":1"#).last!.utf8.count - #","k\#(first)":1"#.utf8.count
                    let error = KeepCalmJSON.facts(Self.bytes(text)).error
                    #expect(error?.code == .malformed && error?.offset == at, "name \(first) again as name \(second) of \(count): \(String(describing: error))")
                    checked += 1
                }
            }
        }
        #expect(checked == 34, "all but the two 4 KB-plus texts")
        // Names compare byte for byte once decoded, not by Unicode equivalence (RFC 8259 §8.3).
        let equivalent = #"{"type":"MotionData","\u00e9":1,"e\u0301":2,"é":3,"# + payload + "}"
        #expect(KeepCalmJSON.facts(Self.bytes(equivalent)).error?.offset == equivalent.utf8.count - #","é":3,"#.utf8.count - payload.utf8.count - 1)
        let distinctForms = #"{"type":"MotionData","\u00e9":1,"e\u0301":2,"# + payload + "}"
        #expect(KeepCalmJSON.decodeResult(Self.bytes(distinctForms)) == .success(Self.canonical))
    }

    @Test func anEscapedSurrogateWithoutItsPairIsMalformed() {
        for escape in [#"\ud800"#, #"\uD800\u0041"#, #"\udc00"#, #"\uDBFF\uDBFF"#, #"\ud800x"#, #"\ude00\ud83d"#] {
            for place in Self.places {
                let message = Self.filling(place.template, with: Self.bytes(escape)).message
                #expect(KeepCalmJSON.facts(message).error?.code == .malformed, "\(escape) in \(place.name)")
            }
        }
        let paired = Self.filling(Self.places[1].template, with: Self.bytes(#"\ud83d\ude00"#)).message
        #expect(KeepCalmJSON.decodeResult(paired) == .success(Self.canonical))
    }
}
