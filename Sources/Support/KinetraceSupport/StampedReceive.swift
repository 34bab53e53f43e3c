import CKinetraceSystem

/// Datagrams with the kernel's arrival stamp (Linux SO_TIMESTAMPNS): a reply's
/// arrival time is then exact however late the receiving thread reads it, so
/// that thread may batch its wake-ups instead of competing with a sender.
package enum StampedReceive {
    /// Turns stamping on for `fd`; false where unsupported (receives then carry no stamp).
    package static func enable(_ fd: Int32) -> Bool { kinetrace_enable_receive_timestamps(fd) == 0 }

    /// One datagram without waiting into `buffer`: its length and arrival stamp
    /// (CLOCK_REALTIME ns, nil when unstamped), or -1 with errno set.
    package static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, arrivalRealtimeNs: Int64?) {
        var stamp: Int64 = -1
        let n = kinetrace_receive_stamped(fd, buffer.baseAddress, UInt(buffer.count), &stamp)
        return (Int(n), stamp >= 0 ? stamp : nil)
    }
}
