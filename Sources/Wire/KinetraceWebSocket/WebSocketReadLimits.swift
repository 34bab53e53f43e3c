/// What a reader of one WebSocket connection takes from its peer before it gives up: the
/// numbers the host (`kinetrace host --transport ws`) and a capture reader of its sessions
/// (`kinetrace convert --transport ws`) share, so both refuse the same frames.
///
/// - A frame longer than `maximumFrameBytes` is refused from its header, before its payload is held.
/// - A message longer than `maximumMessageBytes`, or in more than `maximumFragments` fragments, is refused.
/// - An HTTP head (the upgrade request or its answer) longer than `maximumHeadBytes` is refused.
package struct WebSocketReadLimits: Hashable, Sendable {
    package var maximumFrameBytes: Int
    package var maximumMessageBytes: Int
    package var maximumFragments: Int
    package var maximumHeadBytes: Int

    package init(maximumFrameBytes: Int, maximumMessageBytes: Int, maximumFragments: Int, maximumHeadBytes: Int) {
        self.maximumFrameBytes = maximumFrameBytes
        self.maximumMessageBytes = maximumMessageBytes
        self.maximumFragments = maximumFragments
        self.maximumHeadBytes = maximumHeadBytes
    }

    /// 64 KiB frames and messages, 64 fragments, an 8 KiB head.
    package static let defaults = WebSocketReadLimits(maximumFrameBytes: 65_536, maximumMessageBytes: 65_536, maximumFragments: 64,
                                                      maximumHeadBytes: HTTPHead.defaultMaximumBytes)

    /// The longest frame header (2 bytes, a 64-bit length, a masking key): a reader holding
    /// `maximumFrameBytes + maximumFrameHeaderBytes` always holds a whole frame.
    package static let maximumFrameHeaderBytes = 14
}
