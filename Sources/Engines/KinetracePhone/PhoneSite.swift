import KinetraceHost
import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// What `kinetrace phone` serves beside the stream, and what it keeps of each phone: the page,
/// the operator's list, and each phone's side channel (its name, its labels, its cues and the
/// host's decisions). A phone is the pair of a stream connection (`/stream?phone=TOKEN`, the
/// controller) and a side channel (`/control`, whose first message names the same token).
/// Everything here runs on the host's one event loop.
package final class PhoneSite: HostSite, HostObserver, @unchecked Sendable {  // confined to the host's event loop
    package struct Settings: Sendable {
        package var wireProtocol: any WireProtocol
        /// Gestures a guided session cues, and a free session offers.
        package var gestures: [String] = ["jump"]
        /// A guided cue comes a uniform draw from this range after the last (ms).
        package var cueIntervalMs: ClosedRange<Int> = 4000...8000
        package var seed: UInt64 = 1
        /// The mode a phone starts in.
        package var guided = true
        /// At most this many phones at once.
        package var maximumPhones = 256
        package init(wireProtocol: any WireProtocol) { self.wireProtocol = wireProtocol }
    }

    /// Gestures a label may name: those `gestures eval` scores.
    package static let knownGestures = ["jump", "duck", "tilt_left", "tilt_right"]
    /// A free-mode label covers this long before the tap ("I just jumped").
    package static let freeLabelLookBackMs = 700
    /// Labels a phone may send: a burst of 5, then 2 a second.
    static let labelBurst = 5.0, labelsPerSecond = 2.0
    /// Refused messages after which a channel is closed.
    static let refusalsBeforeClose = 50

    package struct Phone: Sendable {
        package var token: String
        package var name = ""
        package var guided = true
        package var controller: Endpoint?
        var streamKey: PeerKey?
        var channel: SiteChannel?
        package var samples = 0
        package var labels = 0
        package var cues = 0
        package var decisions = 0
        var labelAllowance = PhoneSite.labelBurst
        var allowanceAtNs: Int64 = 0
        var refused = 0
        var generator: SeededGenerator
        /// The side channel whose next cue is scheduled, if any.
        var cueChannel: Int?
        /// The phone left: kept for the summary and the operator's list.
        package var gone = false
    }

    private let settings: Settings
    private let template: String
    private let pushesDecisions: Bool
    private(set) package var phones: [String: Phone] = [:]
    private var joinOrder: [String] = []
    private var tokenOfStream: [PeerKey: String] = [:]
    private var tokenOfChannel: [Int: String] = [:]
    private var seedRecorded = false
    /// Side-channel messages refused (malformed, out of range, too fast), for the summary.
    private(set) package var refusedMessages = 0

    package init(settings: Settings) throws(SampleTemplate.Unsupported) {
        self.settings = settings
        template = try SampleTemplate(settings.wireProtocol).json.jsonText
        // A host that applies every sample would buzz the phone at the sample rate.
        if case .threshold? = settings.wireProtocol.declaration.flatMap({ $0.host?.behaviour }) ?? Self.builtInBehaviour(settings.wireProtocol) {
            pushesDecisions = true
        } else {
            pushesDecisions = false
        }
    }

    private static func builtInBehaviour(_ wireProtocol: any WireProtocol) -> DeclaredHost.Behaviour? {
        (wireProtocol as? any CompiledWireProtocol).flatMap { type(of: $0).builtInDeclaration?.declared.host?.behaviour }
    }

    // MARK: Pages

    package func page(for target: String) -> SitePage? {
        switch String(target.prefix { $0 != "?" }) {
        case "/", "/index.html": return SitePage(contentType: "text/html; charset=utf-8", body: Array(PhonePage.html.utf8))
        case "/operator": return SitePage(contentType: "text/html; charset=utf-8", body: Array(OperatorPage.html.utf8))
        case "/session.json": return SitePage(contentType: "application/json", body: Array(sessionJSON.utf8))
        case "/phones.json": return SitePage(contentType: "application/json", body: Array(phonesJSON.jsonText.utf8))
        default: return nil
        }
    }

    /// What the page needs to stream: the protocol's template, the gestures and the mode.
    var sessionJSON: String {
        JSONValue.object([
            "protocol": .string(settings.wireProtocol.id.name), "rate_hz": .number(settings.wireProtocol.nominalRateHz),
            "gestures": .array(settings.gestures.map { .string($0) }), "mode": .string(settings.guided ? "guided" : "free"),
            "decisions": .bool(pushesDecisions), "free_look_back_ms": .integer(Int64(Self.freeLabelLookBackMs)),
            "template": .string(template),
        ]).jsonText
    }

    /// The operator's list: every phone seen, in the order they joined.
    package var phonesJSON: JSONValue {
        .object([
            "protocol": .string(settings.wireProtocol.id.name),
            "phones": .array(joinOrder.compactMap { phones[$0] }.map { phone in
                .object(["name": .string(phone.name), "mode": .string(phone.guided ? "guided" : "free"),
                         "controller": phone.controller.map { .string($0.description) } ?? .null,
                         "streaming": .bool(phone.streamKey != nil), "connected": .bool(!phone.gone),
                         "samples": .integer(Int64(phone.samples)), "labels": .integer(Int64(phone.labels)),
                         "cues": .integer(Int64(phone.cues)), "decisions": .integer(Int64(phone.decisions))])
            }),
        ])
    }

    /// Phones seen, in the order they joined.
    package var phonesInOrder: [Phone] { joinOrder.compactMap { phones[$0] } }

    // MARK: The stream

    package func streamOpened(target: String, peer: Peer, record: (TraceRecord) -> Void) {
        guard let token = Self.query(target, "phone").flatMap(Self.validToken) else { return }
        if phones[token] == nil {
            guard admit(token) else { return }
        }
        guard var phone = phones[token], phone.streamKey == nil else { return }
        phone.streamKey = peer.key
        phone.controller = peer.endpoint
        phones[token] = phone
        tokenOfStream[peer.key] = token
        introduce(token, record: record)
    }

    package func received(from controller: Peer) {
        guard let token = tokenOfStream[controller.key] else { return }
        phones[token]?.samples += 1
    }

    package func decided(_ decision: HostDecision, controller: Peer) {
        guard let token = tokenOfStream[controller.key], var phone = phones[token] else { return }
        phone.decisions += 1
        phones[token] = phone
        guard pushesDecisions, let channel = phone.channel else { return }
        var members: [String: JSONValue] = ["type": .string("decision"), "decision": .string(decision.name)]
        if let t = decision.sampleTimeMs { members["sender_time_ms"] = .integer(Int64(clamping: t)) }
        channel.send(JSONValue.object(members).jsonText)
    }

    package func ended(_ controller: Peer) {
        guard let token = tokenOfStream.removeValue(forKey: controller.key) else { return }
        phones[token]?.streamKey = nil
        leaveIfGone(token)
    }

    // MARK: The side channel

    package func opensChannel(at path: String) -> Bool { path == "/control" }

    package func channelMessage(_ channel: SiteChannel, text: [UInt8], record: (TraceRecord) -> Void) {
        guard case .success(let value) = JSONValue.parse(text), let message = value.objectValue, let type = message["type"]?.stringValue else {
            return refuse(channel, "a message is a JSON object with a \"type\"")
        }
        if type == "alive" { return }
        guard let token = tokenOfChannel[channel.number] else {
            guard type == "hello" else { return refuse(channel, "the first message is hello") }
            return hello(channel, message, record: record)
        }
        switch type {
        case "label": label(token, channel, message, record: record)
        case "mode":
            guard let mode = message["mode"]?.stringValue, mode == "guided" || mode == "free" else { return refuse(channel, "mode is guided or free") }
            let guided = mode == "guided"
            guard phones[token]?.guided != guided else { return }
            phones[token]?.guided = guided
            if guided, phones[token]?.controller != nil { scheduleCue(token, channel) }
        default: refuse(channel, "unknown message type \(type.prefix(40))")
        }
    }

    package func channelClosed(_ channel: SiteChannel) {
        guard let token = tokenOfChannel.removeValue(forKey: channel.number) else { return }
        if phones[token]?.channel === channel { phones[token]?.channel = nil }
        leaveIfGone(token)
    }

    private func hello(_ channel: SiteChannel, _ message: [String: JSONValue], record: (TraceRecord) -> Void) {
        guard let token = message["phone"]?.stringValue.flatMap(Self.validToken) else {
            return refuse(channel, "hello names the phone: 8 to 64 letters and digits")
        }
        guard let name = message["name"]?.stringValue.flatMap(Self.validName) else {
            return refuse(channel, "a name has 1 to 32 characters and no control characters")
        }
        if phones[token] == nil {
            guard admit(token) else {
                channel.close(code: 1008, reason: "this session takes at most \(settings.maximumPhones) phones")
                return
            }
        }
        guard var phone = phones[token], phone.channel == nil else {
            channel.close(code: 1008, reason: "this phone already has a channel")
            return
        }
        phone.name = name
        if let mode = message["mode"]?.stringValue { phone.guided = mode != "free" }
        phone.channel = channel
        phones[token] = phone
        tokenOfChannel[channel.number] = token
        introduce(token, record: record)
    }

    /// A new phone, at most `maximumPhones` of them; the longest gone makes room first.
    private func admit(_ token: String) -> Bool {
        if phones.count >= settings.maximumPhones {
            guard let oldest = joinOrder.first(where: { phones[$0]?.gone == true }) else { return false }
            phones[oldest] = nil
            joinOrder.removeAll { $0 == oldest }
        }
        // Each phone's cues from the session's seed and its join number: reproducible for a given order.
        phones[token] = Phone(token: token, guided: settings.guided, generator: SeededGenerator(seed: settings.seed).derived(UInt64(joinOrder.count + 1)))
        joinOrder.append(token)
        return true
    }

    /// Once a phone has both its stream and its channel: the trace names it, and the page learns its controller.
    private func introduce(_ token: String, record: (TraceRecord) -> Void) {
        guard let phone = phones[token], let controller = phone.controller, let channel = phone.channel else { return }
        let now = SystemClock.realtimeNs()
        if !seedRecorded {
            seedRecorded = true
            record(.event(EventRecord(timeNs: now, event: "seed", data: [
                "seed": .integer(Int64(bitPattern: settings.seed)), "cue_min_ms": .integer(Int64(settings.cueIntervalMs.lowerBound)),
                "cue_max_ms": .integer(Int64(settings.cueIntervalMs.upperBound)),
            ])))
        }
        record(.event(EventRecord(timeNs: now, event: "phone", data: [
            "controller": .string(controller.description), "name": .string(phone.name), "mode": .string(phone.guided ? "guided" : "free"),
        ])))
        channel.send(JSONValue.object(["type": .string("welcome"), "controller": .string(controller.description)]).jsonText)
        // Cues only once a label can name the controller.
        if phone.guided { scheduleCue(token, channel) }
    }

    private func label(_ token: String, _ channel: SiteChannel, _ message: [String: JSONValue], record: (TraceRecord) -> Void) {
        guard var phone = phones[token] else { return }
        guard let controller = phone.controller else { return refuse(channel, "a label before the phone streams names no controller") }
        guard let gesture = message["gesture"]?.stringValue, Self.knownGestures.contains(gesture) else {
            return refuse(channel, "a label's gesture is one of \(Self.knownGestures.joined(separator: ", "))")
        }
        let now = SystemClock.realtimeNs()
        // Phones' clocks may be off by minutes, not days: a stamp a day away is a lie or a bug.
        guard let t = message["sender_time_ms"]?.integerValue, t > 0, abs(t - now / 1_000_000) <= 86_400_000 else {
            return refuse(channel, "a label's sender_time_ms is ms since the UNIX epoch on the phone's clock, within a day of the host's")
        }
        var duration: UInt64?
        if let d = message["duration_ms"] {
            guard let ms = d.integerValue, (1...10_000).contains(ms) else { return refuse(channel, "a label's duration_ms is from 1 to 10000") }
            duration = UInt64(ms)
        }
        phone.labelAllowance = min(Self.labelBurst, phone.labelAllowance + Double(now - phone.allowanceAtNs) / 1e9 * Self.labelsPerSecond)
        phone.allowanceAtNs = now
        guard phone.labelAllowance >= 1 else {
            phones[token] = phone
            return refuse(channel, "labels come at most \(Int(Self.labelsPerSecond)) a second")
        }
        phone.labelAllowance -= 1
        phone.labels += 1
        phones[token] = phone
        record(.label(LabelRecord(timeNs: now, controller: controller, gesture: gesture, senderTimeMs: UInt64(t), durationMs: duration)))
        channel.send(JSONValue.object(["type": .string("labelled"), "gesture": .string(gesture), "labels": .integer(Int64(phone.labels))]).jsonText)
    }

    /// The next guided cue, a seeded draw from the cue interval away: one chain of cues per
    /// channel, however often the phone is introduced (a stream that reconnects) or switches modes.
    private func scheduleCue(_ token: String, _ channel: SiteChannel) {
        guard var phone = phones[token], phone.guided, phone.channel === channel, phone.cueChannel != channel.number else { return }
        phone.cueChannel = channel.number
        let range = settings.cueIntervalMs
        let delay = range.lowerBound + Int(phone.generator.next() % UInt64(range.upperBound - range.lowerBound + 1))
        let gesture = settings.gestures[Int(phone.generator.next() % UInt64(settings.gestures.count))]
        phones[token] = phone
        channel.after(milliseconds: delay) { [weak self, weak channel] in
            guard let self, let channel, var phone = self.phones[token] else { return }
            phone.cueChannel = nil
            self.phones[token] = phone
            guard phone.guided, phone.channel === channel else { return }
            phone.cues += 1
            self.phones[token] = phone
            channel.send(JSONValue.object(["type": .string("cue"), "gesture": .string(gesture), "cue": .integer(Int64(phone.cues))]).jsonText)
            self.scheduleCue(token, channel)
        }
    }

    private func refuse(_ channel: SiteChannel, _ reason: String) {
        refusedMessages += 1
        if let token = tokenOfChannel[channel.number], var phone = phones[token] {
            phone.refused += 1
            phones[token] = phone
            if phone.refused > Self.refusalsBeforeClose { return channel.close(code: 1008, reason: "too many refused messages") }
        }
        channel.send(JSONValue.object(["type": .string("refused"), "reason": .string(reason)]).jsonText)
    }

    private func leaveIfGone(_ token: String) {
        guard let phone = phones[token], phone.streamKey == nil, phone.channel == nil else { return }
        phones[token]?.gone = true
    }

    // MARK: Input checks

    /// A query parameter's raw value (tokens need no decoding: letters and digits only).
    static func query(_ target: String, _ name: String) -> String? {
        guard let start = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: start)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }

    static func validToken(_ text: String) -> String? {
        (8...64).contains(text.utf8.count) && text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }) ? text : nil
    }

    static func validName(_ text: String) -> String? {
        var trimmed = Substring(text)
        while trimmed.first?.isWhitespace == true { trimmed.removeFirst() }
        while trimmed.last?.isWhitespace == true { trimmed.removeLast() }
        guard (1...32).contains(trimmed.count), trimmed.utf8.count <= 128,
              !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) else { return nil }
        return String(trimmed)
    }
}
