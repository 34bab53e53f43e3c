import ArgumentParser
import Crypto
import Foundation
import KinetraceTLS
import KinetraceTransport
import SwiftASN1
import X509

/// The command's capabilities beyond the libraries': TLS for `wss://`.
package enum CommandCapabilities {
    package static func install() { NIOSSLProvider.install() }
}

/// How a controller trusts a `wss://` host: curl's spellings.
struct TLSClientOptions: ParsableArguments {
    @Option(name: .customLong("cacert"), help: ArgumentHelp(
        "For a wss:// host, trust only the certificates in this PEM file (the host's self-signed one), as curl's --cacert.",
        valueName: "file"), completion: .file())
    var certificateAuthorityFile: String?

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: ArgumentHelp(
        "For a wss:// host, accept any certificate, as curl's --insecure: the traffic is still encrypted, but the host is not checked."))
    var insecure = false

    /// The flags' sense against the URL given (`flag` names it for errors).
    func validate(secure: Bool, flag: String) throws {
        if certificateAuthorityFile != nil && insecure { throw ValidationError("--cacert and --insecure contradict each other: give one.") }
        if !secure, certificateAuthorityFile != nil || insecure {
            throw ValidationError("--cacert and --insecure apply to a wss:// host; \(flag) names no TLS host.")
        }
    }

    /// The trust they give; reads --cacert (at most 1 MiB of PEM).
    func trust() throws -> TLSTrust {
        if insecure { return .anyCertificate }
        guard let path = certificateAuthorityFile else { return .system }
        return .certificates(pem: try TLSFiles.readPEM(path, what: "--cacert"))
    }
}

/// The certificate a `wss://` host serves.
struct TLSServerOptions: ParsableArguments {
    @Option(name: .customLong("certificate"), help: ArgumentHelp(
        "For a wss:// host (host --transport wss, and phone), serve this PEM certificate chain (default: a self-signed certificate made on first use and kept; see the discussion).",
        valueName: "file"), completion: .file())
    var certificateFile: String?

    @Option(name: .customLong("private-key"), help: ArgumentHelp("With --certificate, its PEM private key.", valueName: "file"), completion: .file())
    var privateKeyFile: String?

    func validate(secure: Bool) throws {
        if (certificateFile == nil) != (privateKeyFile == nil) { throw ValidationError("--certificate and --private-key go together.") }
        if !secure, certificateFile != nil { throw ValidationError("--certificate and --private-key apply to a wss:// host (--transport wss).") }
    }

    /// The identity to serve: the files given, or the kept self-signed one (made now if there is
    /// none). `note` is told where a new one was made.
    func identity(note: (String) -> Void) throws -> TLSServerIdentity {
        if let certificateFile, let privateKeyFile {
            return TLSServerIdentity(certificateChainPEM: try TLSFiles.readPEM(certificateFile, what: "--certificate"),
                                     privateKeyPEM: try TLSFiles.readPEM(privateKeyFile, what: "--private-key"))
        }
        return try SelfSignedIdentity.loadOrMake(note: note)
    }
}

enum TLSFiles {
    static let maximumPEMBytes = 1 << 20

    /// A PEM file's bytes: at most 1 MiB, and holding a PEM block.
    static func readPEM(_ path: String, what: String) throws -> [UInt8] {
        // A FIFO or a device would block or never end: a certificate is a file.
        var info = stat()
        guard stat(path, &info) == 0 else { throw ValidationError("\(what) \(path): cannot be read.") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ValidationError("\(what) \(path): not a regular file.") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("\(what) \(path): cannot be read.") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumPEMBytes + 1)) ?? Data()
        guard data.count <= maximumPEMBytes else { throw ValidationError("\(what) \(path): over 1 MiB; a PEM certificate or key is a few KiB.") }
        guard data.range(of: Data("-----BEGIN ".utf8)) != nil else { throw ValidationError("\(what) \(path): no PEM block (-----BEGIN …) in it.") }
        return Array(data)
    }
}

/// The self-signed certificate a `wss://` host serves when given none: an ECDSA P-256 key and a
/// certificate for localhost, this machine's name and its addresses, valid 397 days (the
/// longest a browser accepts), kept in `$XDG_DATA_HOME/kinetrace/tls` (else
/// `~/.local/share/kinetrace/tls`) so that a phone or a --cacert that trusted it once keeps
/// trusting it. The key file is 0600. The key and serial come from the system's generator:
/// they are secrets, not experiment choices, and no run depends on them.
package enum SelfSignedIdentity {
    static let certificateName = "self-signed-certificate.pem"
    static let keyName = "self-signed-key.pem"

    static var directory: String? {
        let environment = ProcessInfo.processInfo.environment
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/kinetrace/tls" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/share/kinetrace/tls" }
        return nil
    }

    static func loadOrMake(note: (String) -> Void) throws -> TLSServerIdentity {
        guard let directory else {
            throw ValidationError("no place to keep a self-signed certificate (neither XDG_DATA_HOME nor HOME is an absolute path): give --certificate and --private-key.")
        }
        let certificatePath = directory + "/" + certificateName, keyPath = directory + "/" + keyName
        let manager = FileManager.default
        if manager.fileExists(atPath: certificatePath), manager.fileExists(atPath: keyPath) {
            return TLSServerIdentity(certificateChainPEM: try TLSFiles.readPEM(certificatePath, what: "the kept certificate"),
                                     privateKeyPEM: try TLSFiles.readPEM(keyPath, what: "the kept key"))
        }
        let (certificate, key) = try make()
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            // Each file written whole under a private temporary name, then renamed into place, the
            // key first: a host starting at the same moment reads a whole pair or makes its own.
            let suffix = ".\(ProcessInfo.processInfo.processIdentifier).tmp"
            guard manager.createFile(atPath: keyPath + suffix, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]),
                  manager.createFile(atPath: certificatePath + suffix, contents: Data(certificate.utf8), attributes: [.posixPermissions: 0o644]),
                  rename(keyPath + suffix, keyPath) == 0, rename(certificatePath + suffix, certificatePath) == 0 else {
                unlink(keyPath + suffix)
                unlink(certificatePath + suffix)
                throw ValidationError("cannot write a self-signed certificate in \(directory)")
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("cannot keep a self-signed certificate in \(directory): \(error.localizedDescription)")
        }
        note("made a self-signed certificate for \(subjectNames().joined(separator: ", ")), kept in \(certificatePath); controllers trust it with --cacert \(certificatePath)")
        return TLSServerIdentity(certificateChainPEM: Array(certificate.utf8), privateKeyPEM: Array(key.utf8))
    }

    /// The names and addresses the certificate covers.
    static func subjectNames() -> [String] {
        var names = ["localhost", "127.0.0.1", "::1"]
        let host = ProcessInfo.processInfo.hostName
        if !host.isEmpty, host != "localhost", host.utf8.count <= 253 { names.append(host) }
        return names
    }

    /// A new certificate and key, as PEM text.
    package static func make() throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName("Kinetrace host (self-signed)")
            OrganizationName("Kinetrace")
        }
        let now = Date()
        let alternatives: [GeneralName] = subjectNames().map { text in
            if let address = IPv4Address(text) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(address.rawValue))) }
            if let address = IPv6Address(text) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(address.rawValue))) }
            return .dnsName(text)
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600), notValidAfter: now.addingTimeInterval(397 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                // No key usage: a self-signed certificate trusted as its own issuer must not
                // forbid signing certificates, or TLS libraries refuse it as its own anchor.
                Critical(BasicConstraints.notCertificateAuthority)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternatives)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation)
    }
}

/// An IPv4 address literal's four bytes.
private struct IPv4Address {
    let rawValue: [UInt8]
    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        guard bytes.count == 4 else { return nil }
        rawValue = bytes
    }
}

/// An IPv6 address literal's sixteen bytes (inet_pton).
private struct IPv6Address {
    let rawValue: [UInt8]
    init?(_ text: String) {
        var address = in6_addr()
        guard text.contains(":"), inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        rawValue = withUnsafeBytes(of: &address) { Array($0) }
    }
}
