#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CKinetraceSystem

/// Giving up privileges once they have served, as tcpdump does after opening
/// its device: a capture needs root or CAP_NET_RAW only to open the handle,
/// and nothing of the kind to read packets and write files already open.
package enum Privileges {
    /// Why privileges could not be given up; the caller stops rather than run privileged.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package var description: String
        package init(_ description: String) { self.description = description }
    }

    package static func userExists(_ user: String) -> Bool { getpwnam(user) != nil }

    /// Becomes `user` (its uid, primary gid and no supplementary groups), which also
    /// clears every capability; with no user, keeps the uid and clears every capability.
    /// Must be called before the process starts threads: capabilities are per thread.
    /// Returns what it did, in words.
    package static func drop(toUser user: String?) throws(Failure) -> String {
        if let user {
            guard let entry = getpwnam(user) else { throw Failure("-Z \(user): no such user") }
            let uid = entry.pointee.pw_uid, gid = entry.pointee.pw_gid
            if geteuid() != 0 {
                guard geteuid() == uid else { throw Failure("-Z \(user): only root can become another user") }
            } else {
                guard setgroups(0, nil) == 0, setgid(gid) == 0, setuid(uid) == 0 else {
                    throw Failure("-Z \(user): cannot switch to uid \(uid), gid \(gid): \(String(cString: strerror(errno)))")
                }
                // setuid from root keeps nothing, but a failed drop must never go unnoticed.
                guard getuid() == uid, geteuid() == uid, getgid() == gid, setuid(0) != 0 else {
                    throw Failure("-Z \(user): the switch to uid \(uid) did not hold")
                }
            }
            _ = kinetrace_clear_capabilities()
            return "running as \(user) (uid \(uid), gid \(gid)), with no capabilities"
        }
        guard kinetrace_clear_capabilities() == 0 else {
            #if os(Linux)
            throw Failure("cannot clear the capability sets: \(String(cString: strerror(errno)))")
            #else
            return "running as uid \(getuid()) (this system has no Linux capabilities to clear)"
            #endif
        }
        return "running as uid \(getuid()) with no capabilities"
    }
}
