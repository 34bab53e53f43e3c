import Foundation
import KinetraceTestSupport
import Testing

/// `wss://`: the host's certificate (given, or self-signed, made once and kept), the
/// controller's trust (`--cacert`, `--insecure`, the system's), and what each refuses.
@Suite(.serialized) struct WebSocketSecureTests {
    /// `kinetrace ARGS` with XDG_DATA_HOME set to `data`, where a self-signed certificate is kept.
    static func command(_ data: URL, _ arguments: [String]) -> (URL, [String]) {
        (URL(fileURLWithPath: "/usr/bin/env"), ["XDG_DATA_HOME=\(data.path)", (try? Fixture.binary.path) ?? "kinetrace"] + arguments)
    }

    static func startHost(_ data: URL, _ extra: [String] = []) throws -> (Background, String) {
        let (executable, arguments) = command(data, ["host", "--transport", "wss", "--path", "/secure", "--port", "0", "--format", "json"] + extra)
        let host = try Background(executable, arguments)
        let line = try host.waitForLine(startingWith: "listening on ")
        return (host, try #require(line.split(separator: ":").last.map(String.init)))
    }

    /// A self-signed certificate is made on first use, kept (key 0600), reused on the next
    /// start, and trusted through --cacert by simulate, replay and conform.
    @Test func theSelfSignedCertificateIsKeptAndTrustedThroughCACert() throws {
        let data = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let certificate = data.appendingPathComponent("kinetrace/tls/self-signed-certificate.pem").path
        let key = data.appendingPathComponent("kinetrace/tls/self-signed-key.pem").path

        var (host, port) = try Self.startHost(data)
        #expect(host.stderr.contains("made a self-signed certificate for localhost, 127.0.0.1, ::1"), "\(host.stderr)")
        let first = try String(contentsOfFile: certificate, encoding: .utf8)
        #expect(first.hasPrefix("-----BEGIN CERTIFICATE-----"))
        let mode = try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the private key must be readable by its owner only: \(String(describing: mode))")
        let sim = try kinetrace(["simulate", "--to", "wss://localhost:\(port)/secure", "--cacert", certificate, "--duration", "1", "--format", "json"])
        #expect(sim.status == 0, "\(sim.stderr)")
        let replay = try kinetrace(["replay", Fixture.bundledTrace, "--to", "wss://127.0.0.1:\(port)/secure", "--cacert", certificate, "--end", "3", "-x", "10", "--format", "json"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let stopped = try host.stop(SIGTERM)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stopped.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect(report["connections"] as? Int == 4 && (report["valid_frames"] as? Int ?? 0) >= 10 + 3 * 30, "\(report)")

        (host, port) = try Self.startHost(data)
        defer { _ = try? host.stop(SIGTERM) }
        #expect(!host.stderr.contains("made a self-signed certificate"), "the kept certificate is reused: \(host.stderr)")
        #expect(try String(contentsOfFile: certificate, encoding: .utf8) == first)
        let conform = try kinetrace(["conform", "--host", "wss://127.0.0.1:\(port)/secure", "--cacert", certificate, "--format", "json"], timeout: 240)
        #expect(conform.status == 0, "\(conform.stderr)")
        let verdicts = try #require(try JSONSerialization.jsonObject(with: Data(conform.stdout.utf8)) as? [String: Any])
        let cases = try #require(verdicts["cases"] as? [[String: Any]])
        #expect(cases.filter { $0["verdict"] as? String == "PASS" }.count >= 10 && !cases.contains { $0["verdict"] as? String == "FAIL" })
    }

    /// Without --cacert the self-signed host is not trusted (one line, exit 69); --insecure
    /// connects anyway; plain ws:// to a wss:// port fails in the handshake.
    @Test func anUntrustedCertificateIsRefusedUnlessInsecure() throws {
        let data = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        // Bound to every address, so that 127.0.0.2 reaches it too.
        let (host, port) = try Self.startHost(data, ["--bind", "0.0.0.0"])
        defer { _ = try? host.stop(SIGTERM) }
        let untrusted = try kinetrace(["simulate", "--to", "wss://127.0.0.1:\(port)/secure", "--duration", "1"])
        #expect(untrusted.status == 69)
        #expect(untrusted.stderr.split(separator: "\n").count == 1 && untrusted.stderr.contains("the host's certificate is not trusted"), "\(untrusted.stderr)")
        let insecure = try kinetrace(["simulate", "--to", "wss://127.0.0.1:\(port)/secure", "--duration", "1", "--insecure"])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        let plain = try kinetrace(["simulate", "--to", "ws://127.0.0.1:\(port)/secure", "--duration", "1"])
        #expect(plain.status == 69 && plain.stderr.contains("during the WebSocket handshake"), "\(plain.stderr)")
        // The certificate names localhost, 127.0.0.1, ::1 and the machine's name: the same host
        // reached as 127.0.0.2 is refused even with its certificate trusted, since the address is not on it.
        let otherName = try kinetrace(["simulate", "--to", "wss://127.0.0.2:\(port)/secure", "--duration", "1",
                                       "--cacert", data.appendingPathComponent("kinetrace/tls/self-signed-certificate.pem").path])
        #expect(otherName.status == 69 && otherName.stderr.contains("the host's certificate does not name 127.0.0.2"), "\(otherName.stderr)")
    }

    /// The TLS flags' mistakes, each one line and exit 64 before anything opens.
    @Test func tlsFlagMistakesAreRefused() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let notPEM = dir.appendingPathComponent("not.pem").path, huge = dir.appendingPathComponent("huge.pem").path
        try Data("hello".utf8).write(to: URL(fileURLWithPath: notPEM))
        try Data(repeating: 0x41, count: (1 << 20) + 1).write(to: URL(fileURLWithPath: huge))
        let fifo = dir.appendingPathComponent("fifo.pem").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for (arguments, words) in [
            (["simulate", "--to", "ws://127.0.0.1:9/m", "--insecure", "--duration", "1"], "--cacert and --insecure apply to a wss:// host"),
            (["simulate", "--to", "wss://127.0.0.1:9/m", "--insecure", "--cacert", notPEM, "--duration", "1"], "contradict"),
            (["simulate", "--to", "wss://127.0.0.1:9/m", "--cacert", notPEM, "--duration", "1"], "no PEM block"),
            (["simulate", "--to", "wss://127.0.0.1:9/m", "--cacert", huge, "--duration", "1"], "over 1 MiB"),
            (["simulate", "--to", "wss://127.0.0.1:9/m", "--cacert", fifo, "--duration", "1"], "not a regular file"),
            (["simulate", "--to", "wss://127.0.0.1:9/m", "--cacert", "/dev/zero", "--duration", "1"], "not a regular file"),
            (["simulate", "--to", "wss://127.0.0.1:9/m", "--cacert", dir.appendingPathComponent("missing.pem").path, "--duration", "1"], "cannot be read"),
            (["replay", Fixture.bundledTrace, "--to", "udp://127.0.0.1:9", "--cacert", notPEM], "apply to a wss:// host"),
            (["conform", "--host", "udp://127.0.0.1:9", "-k"], "apply to a wss:// host"),
            (["host", "--transport", "wss", "--certificate", notPEM, "--port", "0"], "--certificate and --private-key go together"),
            (["host", "--transport", "ws", "--certificate", notPEM, "--private-key", notPEM, "--port", "0"], "apply to a wss:// host"),
        ] {
            let result = try kinetrace(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("Usage") && !$0.hasPrefix("  See") && !$0.isEmpty }
            #expect(lines.count == 1 && lines[0].contains(words), "\(arguments): \(result.stderr)")
        }
        // A certificate and key that are PEM but not TLS material, or do not belong together: one line, exit 64.
        let other = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: other) }
        let (firstHost, _) = try Self.startHost(dir)
        _ = try firstHost.stop(SIGTERM)
        let (secondHost, _) = try Self.startHost(other)
        _ = try secondHost.stop(SIGTERM)
        let mismatched = try kinetrace(["host", "--transport", "wss", "--port", "0",
                                        "--certificate", dir.appendingPathComponent("kinetrace/tls/self-signed-certificate.pem").path,
                                        "--private-key", other.appendingPathComponent("kinetrace/tls/self-signed-key.pem").path])
        #expect(mismatched.status == 64 && mismatched.stderr.split(separator: "\n").count == 1, "\(mismatched.stderr)")
        #expect(mismatched.stderr.contains("do not make a TLS server"), "\(mismatched.stderr)")
    }

    /// Bytes that are not TLS, and a TLS client that stops mid-handshake, cost the host one
    /// connection each: it keeps serving, and the timeout closes the stalled one.
    @Test func garbageAndStalledHandshakesEndTheirConnectionOnly() throws {
        let data = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: data) }
        let (host, port) = try Self.startHost(data, ["--connection-timeout", "1"])
        let garbage = try RawWebSocketPeer.rawHTTP(port: Int(port)!, Array("GET /secure HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(!garbage.hasPrefix("HTTP/"), "a TLS port answers no plain HTTP: \(garbage.prefix(80))")
        // A ClientHello's first bytes, then silence: the handshake never finishes.
        let stalled = try RawStream(port: Int(port)!)
        stalled.write([0x16, 0x03, 0x01, 0x00, 0x80, 0x01])
        #expect(stalled.waitForClose(seconds: 10), "a stalled TLS handshake is closed by the connection timeout")
        let insecure = try kinetrace(["simulate", "--to", "wss://127.0.0.1:\(port)/secure", "--duration", "1", "-k"])
        #expect(insecure.status == 0, "the host still serves: \(insecure.stderr)")
        let stopped = try host.stop(SIGTERM)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stopped.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect((report["connections_timed_out"] as? Int ?? 0) >= 1 && report["valid_frames"] as? Int == 10, "\(report)")
    }
}

/// A plain TCP connection for hand-made bytes.
final class RawStream {
    let fd: Int32
    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw FixtureError("cannot connect to port \(port)") }
    }
    deinit { close(fd) }
    func write(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    /// Whether the peer closes within `seconds`.
    func waitForClose(seconds: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<(seconds * 10) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 100) > 0 {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return true }
            }
        }
        return false
    }
}
